package io.orbite.engine.notify;

import io.orbite.engine.ReceivedNotification;
import org.apache.pekko.Done;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SourceShape;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;

/**
 * The source behind {@code Engine.notifications()}: takes one notification from the inbox per pull
 * and nothing ahead of demand, so a slow consumer leaves them in the bounded inbox, which then
 * refuses its senders. Every materialisation shares the one inbox with the others and with the
 * polling calls. When the inbox is empty the stage registers itself as a waiter and the connection
 * thread that puts the next notification in calls its callback; the stream ends once the inbox is
 * closed (the engine closed) and empty.
 */
public final class InboxSource extends GraphStage<SourceShape<ReceivedNotification>> {
  private final Outlet<ReceivedNotification> out = Outlet.create("notifications.out");
  private final SourceShape<ReceivedNotification> shape = SourceShape.of(out);
  private final NotificationInbox inbox;

  /**
   * @param inbox the engine's inbox
   */
  public InboxSource(NotificationInbox inbox) {
    this.inbox = inbox;
  }

  @Override
  public SourceShape<ReceivedNotification> shape() {
    return shape;
  }

  @Override
  public GraphStageLogic createLogic(Attributes attributes) {
    return new GraphStageLogic(shape) {
      private AsyncCallback<Done> woken;
      private NotificationInbox.Waiter waiter;

      {
        setHandler(
            out,
            new AbstractOutHandler() {
              @Override
              public void onPull() {
                take();
              }
            });
      }

      @Override
      public void preStart() {
        woken = createAsyncCallback(done -> take());
        waiter = () -> woken.invoke(Done.getInstance());
      }

      /** Pushes one notification if there is demand, else waits for the next to arrive. */
      private void take() {
        if (!isAvailable(out)) {
          return;
        }
        ReceivedNotification n = inbox.pollOrWait(waiter);
        if (n != null) {
          push(out, n);
        } else if (inbox.closedAndEmpty()) {
          completeStage();
        }
      }

      @Override
      public void postStop() {
        if (waiter != null) {
          inbox.leave(waiter);
        }
      }
    };
  }
}

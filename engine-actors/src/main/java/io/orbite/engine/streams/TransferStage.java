package io.orbite.engine.streams;

import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.batch.RequestValidator;
import io.orbite.engine.batch.TransportSelector;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.stage.AbstractGraphStageWithMaterializedValue;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.TimerGraphStageLogic;

/**
 * The engine as a stream stage: requests are grouped into batches and submitted through the public
 * batch API; results leave in request order or as completed. Demand follows the engine's budgets:
 * the stage pulls only while the requests it holds (admitted and not yet emitted) stay under its
 * task and byte window, so a fast upstream is held back by backpressure, never queued.
 *
 * <p>Cancellation and upstream failure cancel the in-flight batches (unsent frames fail CANCELLED)
 * and the stage finishes only after every batch has drained (C5); the materialized stage completes
 * then. Task failures are results, not stream failures.
 */
final class TransferStage
    extends AbstractGraphStageWithMaterializedValue<
        FlowShape<TransferRequest, TransferResult>, CompletionStage<Done>> {
  private static final String RETRY_TIMER = "retry";
  private static final String WINDOW_TIMER = "window";
  private static final java.time.Duration RETRY_DELAY = java.time.Duration.ofMillis(2);

  private final TransferEngine engine;
  private final StreamSettings settings;
  // The engine's transport policies, compiled once for the stage's own per-request check.
  private final TransportSelector selector;
  private final Inlet<TransferRequest> in = Inlet.create("TransferStage.in");
  private final Outlet<TransferResult> out = Outlet.create("TransferStage.out");
  private final FlowShape<TransferRequest, TransferResult> shape = FlowShape.of(in, out);

  TransferStage(TransferEngine engine, StreamSettings settings) {
    this.engine = engine;
    this.selector = TransportSelector.compile(engine.config().policies());
    this.settings = settings;
  }

  @Override
  public FlowShape<TransferRequest, TransferResult> shape() {
    return shape;
  }

  @Override
  public Pair<GraphStageLogic, CompletionStage<Done>> createLogicAndMaterializedValuePair(
      Attributes attributes) {
    CompletableFuture<Done> drained = new CompletableFuture<>();
    return Pair.create(new Logic(drained), drained);
  }

  /** A request the stage holds, with its arrival number. */
  private record Held(long seq, TransferRequest request) {}

  private final class Logic extends TimerGraphStageLogic {
    private final CompletableFuture<Done> drained;
    private final int maxTasks;
    private final long maxBytes;
    private final int maxBatchTasks;
    private final ArrayDeque<List<Held>> toSubmit = new ArrayDeque<>();
    private List<Held> group = new ArrayList<>();
    private final Set<Batch> inFlight = new HashSet<>();
    private final Map<Long, TransferResult> finished = new HashMap<>();
    private final ArrayDeque<TransferResult> ready = new ArrayDeque<>();

    /** A request pulled but not yet taken, because it does not fit the window yet. */
    private TransferRequest parked;

    private int heldTasks;
    private long heldBytes;
    private long nextSeq;
    private long nextToEmit;
    private int submissions;
    private boolean cancelling;
    private Throwable upstreamFailure;
    private final AsyncCallback<Pair<List<Held>, Batch>> onAllocated;
    private final AsyncCallback<Outcome> onOutcome;

    /** What happened to one submitted group. */
    private record Outcome(List<Held> group, Batch batch, BatchStatus status, Throwable failure) {}

    Logic(CompletableFuture<Done> drained) {
      super(shape);
      this.drained = drained;
      // The window never exceeds the engine's budgets, so a group is refused only while other
      // users hold part of them (then it is retried), never for its own size.
      int taskBudget = engine.config().budgets().maxTasksInFlight();
      long byteBudget = engine.config().budgets().maxInflightBytes();
      this.maxTasks =
          settings.maxInflightTasks() > 0
              ? Math.min(settings.maxInflightTasks(), taskBudget)
              : taskBudget;
      this.maxBytes =
          settings.maxInflightBytes() > 0
              ? Math.min(settings.maxInflightBytes(), byteBudget)
              : byteBudget;
      this.maxBatchTasks =
          Math.min(
              settings.maxBatchTasks(),
              Math.min(engine.config().budgets().maxBatchCapacity(), maxTasks));
      this.onAllocated =
          createAsyncCallback(
              p -> {
                inFlight.add(p.second());
                if (cancelling) {
                  p.second().cancel();
                }
              });
      this.onOutcome = createAsyncCallback(this::onOutcome);

      setHandler(
          in,
          new AbstractInHandler() {
            @Override
            public void onPush() {
              parked = grab(in);
              admitParked();
              submitWaiting();
              emit();
              maybePull();
              maybeFinish();
            }

            @Override
            public void onUpstreamFinish() {
              admitParked();
              closeGroup();
              submitWaiting();
              emit();
              maybeFinish();
            }

            @Override
            public void onUpstreamFailure(Throwable cause) {
              upstreamFailure = cause;
              stopAfterDrain();
            }
          });
      setHandler(
          out,
          new AbstractOutHandler() {
            @Override
            public void onPull() {
              emit();
              admitParked();
              submitWaiting();
              maybePull();
              maybeFinish();
            }

            @Override
            public void onDownstreamFinish(Throwable cause) {
              stopAfterDrain();
            }
          });
    }

    @Override
    public void preStart() {
      maybePull();
    }

    @Override
    public void onTimer(Object key) {
      if (WINDOW_TIMER.equals(key)) {
        closeGroup();
      }
      submitWaiting();
      maybeFinish();
    }

    /**
     * Takes the parked request into the current group if it fits the window; a request alone is
     * always taken (the engine then judges it against its budget).
     */
    private void admitParked() {
      if (parked == null) {
        return;
      }
      long length = Math.max(0, parked.lengthBytes());
      boolean fits = heldTasks + 1 <= maxTasks && heldBytes + length <= maxBytes;
      if (heldTasks > 0 && !fits) {
        // The window is full: no request comes before a group ends, so the open group goes now
        // rather than waiting out the batch window for requests that cannot arrive.
        closeGroup();
        return;
      }
      TransferRequest r = parked;
      parked = null;
      Held held = new Held(nextSeq++, r);
      heldTasks++;
      heldBytes += length;
      try {
        // Refuse a bad request on its own, so it cannot fail the valid requests of its group.
        RequestValidator.validate(List.of(r), selector);
      } catch (TransferException e) {
        record(
            held,
            new TaskResult(
                0,
                TaskState.FAILED,
                0,
                e.kind(),
                RemoteEffect.NONE,
                true,
                "refused at submit: " + e.detail(),
                0,
                null,
                Route.NOT_DISPATCHED,
                0));
        return;
      }
      group.add(held);
      if (group.size() >= maxBatchTasks || heldTasks >= maxTasks || heldBytes >= maxBytes) {
        closeGroup();
      } else if (!isTimerActive(WINDOW_TIMER)) {
        scheduleOnce(WINDOW_TIMER, settings.batchWindow());
      }
    }

    /** Pull while nothing is parked and the held requests leave room in the window. */
    private void maybePull() {
      if (cancelling || parked != null || isClosed(in) || hasBeenPulled(in)) {
        return;
      }
      if (heldTasks < maxTasks && heldBytes < maxBytes) {
        pull(in);
      }
    }

    private void closeGroup() {
      cancelTimer(WINDOW_TIMER);
      if (!group.isEmpty()) {
        toSubmit.add(group);
        group = new ArrayList<>();
      }
    }

    private void submitWaiting() {
      while (!cancelling && !toSubmit.isEmpty()) {
        submit(toSubmit.poll());
      }
    }

    private void submit(List<Held> held) {
      submissions++;
      List<TransferRequest> requests = held.stream().map(Held::request).toList();
      // Every group gets a batch of the same capacity, whatever its size, so that a freed batch is
      // always reused from the engine's pool (it keeps batches by exact capacity): groups closed by
      // a
      // full window vary in size, and a batch per size would mean a spawn and an ask per group.
      engine
          .allocateBatchAsync(maxBatchTasks)
          .thenCompose(
              batch -> {
                onAllocated.invoke(Pair.create(held, batch));
                try {
                  // Submitting never blocks on I/O: it charges, validates and hands off.
                  batch.submit(requests);
                } catch (TransferException refused) {
                  // A refusal: nothing of the submission was admitted.
                  onOutcome.invoke(new Outcome(held, batch, null, refused));
                  return CompletableFuture.completedFuture(null);
                }
                return batch
                    .awaitAsync()
                    .handle(
                        (status, f) -> {
                          onOutcome.invoke(new Outcome(held, batch, status, f));
                          return null;
                        });
              })
          .exceptionally(
              failure -> {
                onOutcome.invoke(new Outcome(held, null, null, failure));
                return null;
              });
    }

    private void onOutcome(Outcome o) {
      submissions--;
      if (o.batch() != null) {
        inFlight.remove(o.batch());
        if ((o.status() != null && o.status().done()) || o.failure() instanceof TransferException) {
          // Drained, or refused at submit (nothing admitted): the batch is idle and can go. A
          // batch whose drain is unknown is left alone; its free would be refused anyway.
          try {
            o.batch().free();
          } catch (TransferException e) {
            // Busy or already freed: a batch whose drain is unknown is left to the engine.
          }
        }
      }
      if (o.failure() != null) {
        Throwable cause =
            o.failure() instanceof CompletionException ce && ce.getCause() != null
                ? ce.getCause()
                : o.failure();
        ErrorKind kind = cause instanceof TransferException te ? te.kind() : ErrorKind.UNAVAILABLE;
        if (kind == ErrorKind.RESOURCE_EXHAUSTED && !cancelling && fitsWindow(o.group())) {
          // Budgets shared with other users are momentarily full: try the same group again soon.
          toSubmit.addFirst(o.group());
          scheduleOnce(RETRY_TIMER, RETRY_DELAY);
          return;
        }
        if (o.batch() != null && !(cause instanceof TransferException)) {
          // The batch took the submission (or may have) and then could not be asked about its
          // drain: nothing can be claimed about these tasks' memory or the peer's bytes.
          for (Held h : o.group()) {
            record(
                h,
                new TaskResult(
                    0,
                    TaskState.UNQUIESCED,
                    0,
                    ErrorKind.UNQUIESCED,
                    h.request().op() == io.orbite.engine.Op.WRITE
                        ? RemoteEffect.UNKNOWN
                        : RemoteEffect.NONE,
                    false,
                    "the batch's drain could not be observed: " + cause,
                    0,
                    null,
                    Route.UNREPORTED,
                    0));
          }
        } else {
          for (Held h : o.group()) {
            record(
                h,
                new TaskResult(
                    0,
                    TaskState.FAILED,
                    0,
                    kind,
                    RemoteEffect.NONE,
                    true,
                    "refused at submit: " + TransferException.describe(cause),
                    0,
                    null,
                    Route.NOT_DISPATCHED,
                    0));
          }
        }
      } else {
        for (TaskResult t : o.status().tasks()) {
          record(o.group().get(t.index()), t);
        }
        // A submission that never reached the batch has no task there: it moved nothing.
        for (int i = o.status().tasks().size(); i < o.group().size(); i++) {
          record(
              o.group().get(i),
              new TaskResult(
                  i,
                  TaskState.FAILED,
                  0,
                  ErrorKind.UNAVAILABLE,
                  RemoteEffect.NONE,
                  true,
                  "the batch did not take the submission",
                  0,
                  null,
                  Route.NOT_DISPATCHED,
                  0));
        }
      }
      emit();
      admitParked();
      submitWaiting();
      maybePull();
      maybeFinish();
    }

    private boolean fitsWindow(List<Held> held) {
      long bytes = 0;
      for (Held h : held) {
        bytes += Math.max(0, h.request().lengthBytes());
      }
      return held.size() <= maxTasks && bytes <= maxBytes;
    }

    private void record(Held h, TaskResult t) {
      TransferResult result = new TransferResult(h.request(), t);
      if (settings.ordering() == StreamSettings.Ordering.IN_ORDER) {
        finished.put(h.seq(), result);
      } else {
        ready.add(result);
      }
    }

    private void emit() {
      if (cancelling) {
        return;
      }
      while (isAvailable(out)) {
        TransferResult next;
        if (settings.ordering() == StreamSettings.Ordering.IN_ORDER) {
          next = finished.remove(nextToEmit);
          if (next == null) {
            return;
          }
          nextToEmit++;
        } else {
          next = ready.poll();
          if (next == null) {
            return;
          }
        }
        heldTasks--;
        heldBytes -= Math.max(0, next.request().lengthBytes());
        push(out, next);
      }
    }

    private boolean nothingLeft() {
      return parked == null
          && group.isEmpty()
          && toSubmit.isEmpty()
          && submissions == 0
          && finished.isEmpty()
          && ready.isEmpty();
    }

    private void maybeFinish() {
      if (cancelling) {
        if (submissions == 0) {
          drained.complete(Done.getInstance());
          if (upstreamFailure != null) {
            failStage(upstreamFailure);
          } else {
            completeStage();
          }
        }
        return;
      }
      if (isClosed(in) && nothingLeft()) {
        drained.complete(Done.getInstance());
        completeStage();
      }
    }

    /** Cancel what is in flight and finish once every batch has drained. */
    private void stopAfterDrain() {
      cancelling = true;
      setKeepGoing(true);
      cancelTimer(WINDOW_TIMER);
      cancelTimer(RETRY_TIMER);
      if (!isClosed(in)) {
        cancel(in);
      }
      parked = null;
      group.clear();
      toSubmit.clear();
      inFlight.forEach(Batch::cancel);
      maybeFinish();
    }

    @Override
    public void postStop() {
      if (!drained.isDone()) {
        drained.completeExceptionally(
            new TransferException(
                ErrorKind.UNQUIESCED,
                "transfer stream stopped abruptly with "
                    + submissions
                    + " batch(es) not known to be drained"));
      }
    }
  }
}

package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.ChannelGate.Why;
import io.orbite.engine.testkit.Racers;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A channel's state and the one mapping from it to an error kind (C18): every move between the
 * states, the kind each gives, the refusal a task gets, and racing closers and fencers.
 */
class ChannelGateTest {
  private static final String LABEL = "the TCP channel to 127.0.0.1:4000@5e1f";

  @Test
  void theOneMappingGivesEachStateItsKind() {
    assertNull(ChannelGate.kindOf(ChannelGate.Active.INSTANCE));
    assertEquals(
        ErrorKind.PEER_LOST, ChannelGate.kindOf(new ChannelGate.Closed(Why.PEER_LOST, "gone")));
    assertEquals(
        ErrorKind.UNAVAILABLE,
        ChannelGate.kindOf(new ChannelGate.Closed(Why.LOCAL_CLOSE, "closed here")));
    assertEquals(
        ErrorKind.UNQUIESCED, ChannelGate.kindOf(new ChannelGate.Closed(Why.HELD, "held")));
    assertEquals(ErrorKind.EPOCH_MISMATCH, ChannelGate.kindOf(new ChannelGate.Fenced(7, "new")));
  }

  @Test
  void aClosedChannelMovesToFencedWhenANewerEpochIsLearnedButNeverBack() {
    ChannelGate gate = new ChannelGate(LABEL);
    assertTrue(gate.active());
    assertTrue(gate.close(Why.PEER_LOST, "every lane ended"));
    assertFalse(gate.close(Why.LOCAL_CLOSE, "later close"), "the first closer's reason stands");
    assertEquals(ErrorKind.PEER_LOST, gate.refusalKind());
    assertTrue(gate.fence(0x6a, "the peer now runs epoch 6a"));
    assertEquals(ErrorKind.EPOCH_MISMATCH, gate.refusalKind());
    assertFalse(gate.close(Why.PEER_LOST, "after the fence"), "nothing leaves FENCED");
    assertFalse(gate.fence(0x6b, "again"), "a second fence keeps the first");
    assertEquals(new ChannelGate.Fenced(0x6a, "the peer now runs epoch 6a"), gate.state());
    assertEquals(LABEL + " is fenced: the peer now runs epoch 6a", gate.refusal());
  }

  @Test
  void everyPairOfStatesMovesOnlyForward() {
    List<ChannelGate.State> states =
        List.of(
            ChannelGate.Active.INSTANCE,
            new ChannelGate.Closed(Why.PEER_LOST, "a"),
            new ChannelGate.Closed(Why.HELD, "h"),
            new ChannelGate.Fenced(1, "b"));
    for (int from = 0; from < states.size(); from++) {
      for (int to = 1; to < states.size(); to++) {
        ChannelGate gate = at(states.get(from));
        boolean moved =
            states.get(to) instanceof ChannelGate.Closed c
                ? gate.close(c.why(), c.reason())
                : gate.fence(1, "b");
        assertEquals(to > from, moved, from + " -> " + to);
        assertEquals(states.get(Math.max(from, to)), gate.state(), from + " -> " + to);
      }
    }
  }

  @Test
  void aReconnectingChannelTakesWorkGoesBackToActiveAndStillClosesOrFences() {
    ChannelGate gate = new ChannelGate(LABEL);
    assertFalse(gate.restored(), "an active channel has nothing to restore");
    assertTrue(gate.reconnecting("lane 0 broke"));
    assertFalse(gate.reconnecting("lane 1 broke"), "the first loss's reason stands");
    assertTrue(gate.active(), "a reconnecting channel still takes work");
    assertFalse(gate.working());
    assertInstanceOf(ChannelGate.Reconnecting.class, gate.state());
    assertEquals(ErrorKind.PEER_LOST, gate.refusalKind(), "a task refused meanwhile: PEER_LOST");
    assertEquals(LABEL + " is reconnecting: lane 0 broke", gate.refusal());
    assertTrue(gate.restored());
    assertTrue(gate.working());
    assertNull(gate.refusalKind());
    assertTrue(gate.reconnecting("again"));
    assertTrue(gate.fence(9, "the peer now runs epoch 9"), "a HELLO of another epoch fences");
    assertFalse(gate.restored(), "nothing leaves FENCED");
    assertFalse(gate.reconnecting("late"));
    assertEquals(ErrorKind.EPOCH_MISMATCH, gate.refusalKind());
    ChannelGate lost = new ChannelGate(LABEL);
    lost.reconnecting("both lanes broke");
    assertTrue(lost.close(Why.PEER_LOST, "no lane reconnected within 30000 ms"));
    assertFalse(lost.restored(), "a closed channel is not restored by a late lane");
    assertFalse(lost.active());
  }

  @Test
  void racingRestorersAndFencersEndFenced() throws Exception {
    for (int round = 0; round < 200; round++) {
      ChannelGate gate = new ChannelGate(LABEL);
      gate.reconnecting("lost");
      AtomicInteger restores = new AtomicInteger();
      Runnable restorer =
          () -> {
            if (gate.restored()) {
              restores.incrementAndGet();
            }
          };
      Runnable fencer = () -> gate.fence(3, "newer");
      Runnable loser = () -> gate.reconnecting("lost again");
      Racers.race(List.of(restorer, fencer, loser));
      assertEquals(new ChannelGate.Fenced(3, "newer"), gate.state(), "round " + round);
      assertTrue(restores.get() <= 1);
    }
  }

  @Test
  void aClosedChannelWhoseOwnerIsHeldReadsUnquiescedButAHeldOneStaysHeld() {
    ChannelGate gate = new ChannelGate(LABEL);
    assertTrue(gate.close(Why.LOCAL_CLOSE, "the endpoint was closed"));
    assertEquals(ErrorKind.UNAVAILABLE, gate.refusalKind());
    assertTrue(gate.close(Why.HELD, "it keeps lane 1"), "what it holds outranks why it closed");
    assertEquals(ErrorKind.UNQUIESCED, gate.refusalKind());
    assertEquals(LABEL + " is held: it keeps lane 1", gate.refusal());
    assertFalse(gate.close(Why.PEER_LOST, "later"), "a held channel never reads as lost again");
    assertFalse(gate.close(Why.HELD, "again"), "the first holder's reason stands");
    assertEquals(new ChannelGate.Closed(Why.HELD, "it keeps lane 1"), gate.state());
    assertTrue(gate.fence(5, "newer"), "a restart learned later still fences it");
    assertEquals(ErrorKind.EPOCH_MISMATCH, gate.refusalKind());
  }

  private static ChannelGate at(ChannelGate.State s) {
    ChannelGate gate = new ChannelGate(LABEL);
    switch (s) {
      case ChannelGate.Active a -> {}
      case ChannelGate.Reconnecting r -> gate.reconnecting(r.reason());
      case ChannelGate.Closed c -> gate.close(c.why(), c.reason());
      case ChannelGate.Fenced f -> gate.fence(f.newerEpoch(), f.reason());
    }
    return gate;
  }

  @Test
  void aRefusedTaskGetsOneReceiptOfTheGatesKindNamingTheChannelNeverSent() {
    ChannelGate gate = new ChannelGate(LABEL);
    gate.close(Why.LOCAL_CLOSE, "the requester side was closed");
    List<Receipt> got = new ArrayList<>();
    ReceiptSink sink =
        new ReceiptSink() {
          @Override
          public void deliver(Receipts receipts) {
            for (int k = 0; k < receipts.size(); k++) {
              got.add(receipts.get(k));
            }
          }

          @Override
          public boolean cancelled() {
            return false;
          }
        };
    TaskWork work =
        new TaskWork(
            sink,
            3,
            Op.READ,
            MemorySegment.NULL,
            0,
            1,
            0,
            4096,
            System.nanoTime() + 1_000_000_000L,
            Priority.HIGH);
    assertEquals(1, gate.refuse(work));
    assertEquals(
        List.of(
            Receipt.failed(
                3,
                ErrorKind.UNAVAILABLE,
                RemoteEffect.NONE,
                LABEL + " is closed: the requester side was closed (never sent)")),
        got);
    TransferException e = gate.refusalException("task 3: ");
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    assertTrue(e.getMessage().contains("task 3: " + LABEL + " is closed"), e.getMessage());
  }

  @Test
  void racingClosersAndFencersEachWinAtMostOnceAndFencedAlwaysEndsIt() throws Exception {
    for (int round = 0; round < 200; round++) {
      ChannelGate gate = new ChannelGate(LABEL);
      AtomicInteger closes = new AtomicInteger();
      AtomicInteger fences = new AtomicInteger();
      List<Runnable> movers = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        boolean fencer = t % 3 == 0;
        Why why = Why.values()[t % Why.values().length];
        movers.add(
            () -> {
              if (fencer ? gate.fence(9, "newer") : gate.close(why, "closed")) {
                (fencer ? fences : closes).incrementAndGet();
              }
            });
      }
      Racers.race(movers);
      assertEquals(1, fences.get(), "exactly one fence wins");
      assertTrue(closes.get() <= 2, "at most one close, then one HELD, wins");
      assertInstanceOf(ChannelGate.Fenced.class, gate.state());
    }
  }
}

package io.orbite.qualification.firsthour;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every public call on a closed engine fails at once (within 100 ms) with {@code UNAVAILABLE:
 * engine <name> closed (<call>)}, never a timeout or a Pekko message. The methods are found by
 * reflection: each public instance method of {@link TransferEngine} and {@link Batch} is either
 * refused or in the short list of those that still answer after close (what the engine still owes,
 * its configuration, its identity); a new method in neither list fails this test.
 */
class ClosedEngineIT {
  private static final Duration PROMPT = Duration.ofMillis(100);
  private static final long SEED = 0xC105_ED01L;

  /** Still answer after close: reports of what is owed, and fixed facts of the engine. */
  private static final Set<String> ENGINE_ANSWERS_AFTER_CLOSE =
      Set.of(
          "close",
          "closeAsync",
          "owed",
          "quarantined",
          "config",
          "localSegment",
          "counters",
          "sourceLedger",
          "system",
          "observabilityUrls",
          "ownerView",
          "nicLoadStats",
          "localRegions",
          "isReady",
          "dashboardPanels");

  private static final Set<String> BATCH_ANSWERS_AFTER_CLOSE = Set.of("capacity");

  /**
   * Whether {@code m} is (or overrides) one of {@link Object}'s methods, by name and parameters:
   * {@code Engine.notify(segment, tag, bytes)} is not, though it shares a name with one.
   */
  private static boolean isObjectMethod(Method m) {
    try {
      Object.class.getMethod(m.getName(), m.getParameterTypes());
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  @TempDir Path dir;

  @Test
  void everyPublicCallOnAClosedEngineFailsAtOnceNamingIt() throws Exception {
    TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("closed-source"));
    try {
      RegisteredMemory remoteRegion = source.allocate(64 * 1024, Access.READ_WRITE);
      Pattern.fill(remoteRegion.segment(), 0, 64 * 1024, SEED, 0);
      TransferEngine engine =
          TransferEngine.start(EngineConfig.defaults().withName("closed-engine"));
      RegisteredMemory local = engine.allocate(64 * 1024, Access.READ_WRITE);
      RemoteSegment remote =
          engine.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      Batch batch = engine.allocateBatch(4);
      // A real transfer first, its bytes checked, so the engine being closed is one that worked.
      batch.submit(
          List.of(TransferRequest.read(local, 0, remote, remoteRegion.regionId(), 0, 64 * 1024)));
      BatchStatus status = batch.await(Duration.ofSeconds(10));
      assertTrue(status.allCompleted(), status::toString);
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, 64 * 1024, SEED, 0),
          "bytes read before the close");
      Batch unfreed = engine.allocateBatch(2);

      assertTrue(engine.close(Duration.ofSeconds(20)).isClear(), "clean close");

      Path file = Files.write(dir.resolve("f.bin"), new byte[4096]);
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment range = arena.allocate(4096);
        Arguments args = new Arguments(local, remote, source.localSegment(), file, range);
        List<String> checked = new ArrayList<>();
        checked.addAll(
            checkAll(
                engine, TransferEngine.class, ENGINE_ANSWERS_AFTER_CLOSE, args, "closed-engine"));
        checked.addAll(
            checkAll(unfreed, Batch.class, BATCH_ANSWERS_AFTER_CLOSE, args, "closed-engine"));
        checked.addAll(
            checkAll(batch, Batch.class, BATCH_ANSWERS_AFTER_CLOSE, args, "closed-engine"));
        assertTrue(checked.size() > 30, "refused calls checked: " + checked);
        assertTrue(
            checked.containsAll(
                List.of(
                    "TransferEngine.allocate",
                    "TransferEngine.allocateBatch",
                    "TransferEngine.openSegment",
                    "TransferEngine.register",
                    "Batch.submit",
                    "Batch.await",
                    "TransferEngine.reopen",
                    "TransferEngine.reopenAsync",
                    "TransferEngine.notify",
                    "TransferEngine.notifyAsync",
                    "TransferEngine.notifications",
                    "TransferEngine.pollNotifications",
                    "TransferEngine.pollNotification")),
            checked::toString);
      }

      // What still answers, answers at once.
      long begun = System.nanoTime();
      var owed = engine.owed();
      engine.close(Duration.ofSeconds(5));
      assertTrue(
          Duration.ofNanos(System.nanoTime() - begun).compareTo(PROMPT) < 0,
          "owed and close answer at once");
      assertTrue(owed.isClear(), owed::toString);
      assertEquals(64 * 1024, remoteRegion.lengthBytes());
      assertEquals(
          -1,
          Pattern.verify(remoteRegion.segment(), 0, 64 * 1024, SEED, 0),
          "the source region is intact");
    } finally {
      source.close(Duration.ofSeconds(20));
    }
  }

  @Test
  void aCallWhileTheCloseIsUnderWayFailsAtOnceToo() throws Exception {
    TransferEngine engine =
        TransferEngine.start(EngineConfig.defaults().withName("closing-engine"));
    CompletionStage<?> closing = engine.closeAsync(Duration.ofSeconds(20));
    long begun = System.nanoTime();
    TransferException e = refusal(() -> engine.allocateBatch(1));
    Duration took = Duration.ofNanos(System.nanoTime() - begun);
    assertTrue(took.compareTo(PROMPT) < 0, "refused after " + took);
    assertEquals(ErrorKind.UNAVAILABLE, e.kind());
    assertTrue(
        e.getMessage()
            .matches("UNAVAILABLE: engine closing-engine clos(ing|ed) \\(allocateBatch\\)"),
        e.getMessage());
    closing.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /**
   * The values passed to each parameter type; a type with none fails the test, naming the method.
   */
  private record Arguments(
      RegisteredMemory memory,
      RemoteSegment remote,
      SegmentDescriptor peer,
      Path file,
      MemorySegment range) {
    Object of(Class<?> type, Method m) {
      if (type == long.class) {
        return 4096L;
      } else if (type == int.class) {
        return 2;
      } else if (type == Access.class) {
        return Access.READ_WRITE;
      } else if (type == Duration.class) {
        return Duration.ofSeconds(5);
      } else if (type == String.class) {
        return peer.endpoint();
      } else if (type == SegmentDescriptor.class) {
        return peer;
      } else if (type == RemoteSegment.class) {
        return remote;
      } else if (type == RegisteredMemory.class) {
        return memory;
      } else if (type == MemorySegment.class) {
        return range;
      } else if (type == java.util.function.Consumer.class) {
        return (java.util.function.Consumer<Object>) x -> {};
      } else if (type == Path.class) {
        return file;
      } else if (type == byte[].class) {
        return new byte[] {1, 2, 3};
      } else if (type == io.orbite.engine.Notification.class) {
        return io.orbite.engine.Notification.of("closed", new byte[] {4});
      } else if (type == List.class) {
        return List.of(TransferRequest.read(memory, 0, remote, 1, 0, 4096));
      } else if (type == java.util.Set.class) {
        return java.util.Set.of("a-peer");
      }
      throw new AssertionError("no argument of type " + type.getName() + " for " + m + ": add one");
    }
  }

  /**
   * Calls every public instance method of {@code type} on {@code target} not in {@code answers};
   * returns their names.
   */
  private static List<String> checkAll(
      Object target, Class<?> type, Set<String> answers, Arguments args, String engineName) {
    List<String> refused = new ArrayList<>();
    List<Method> methods =
        Arrays.stream(type.getMethods())
            .filter(m -> !Modifier.isStatic(m.getModifiers()) && !isObjectMethod(m))
            .sorted(Comparator.comparing(Method::toString))
            .toList();
    for (Method m : methods) {
      if (answers.contains(m.getName())) {
        continue;
      }
      Object[] values = Arrays.stream(m.getParameterTypes()).map(t -> args.of(t, m)).toArray();
      String call = type.getSimpleName() + "." + m.getName();
      long begun = System.nanoTime();
      TransferException e =
          refusal(
              () -> {
                Object result = m.invoke(target, values);
                if (result instanceof CompletionStage<?> stage) {
                  try {
                    stage.toCompletableFuture().get(PROMPT.toMillis() * 5, TimeUnit.MILLISECONDS);
                  } catch (ExecutionException x) {
                    throw x.getCause();
                  } catch (TimeoutException x) {
                    fail(
                        call
                            + " returned a stage that did not fail within "
                            + PROMPT.multipliedBy(5));
                  }
                }
                return result;
              });
      Duration took = Duration.ofNanos(System.nanoTime() - begun);
      String message = e.getMessage();
      assertTrue(took.compareTo(PROMPT) < 0, call + " failed only after " + took + ": " + message);
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), call + ": " + message);
      String expected =
          "UNAVAILABLE: engine "
              + engineName
              + " closed ("
              + m.getName().replace("Async", "")
              + ")";
      assertEquals(expected, message, call);
      assertFalse(
          message.contains("pekko")
              || message.contains("Recipient")
              || message.contains("Exception"),
          call + " leaks internals: " + message);
      refused.add(call);
    }
    return refused;
  }

  private interface Call {
    Object run() throws Throwable;
  }

  private static TransferException refusal(Call call) {
    try {
      Object result = call.run();
      throw new AssertionError("expected UNAVAILABLE, got " + result);
    } catch (InvocationTargetException e) {
      return asTransfer(e.getCause());
    } catch (AssertionError e) {
      throw e;
    } catch (Throwable e) {
      return asTransfer(e);
    }
  }

  private static TransferException asTransfer(Throwable t) {
    if (t instanceof TransferException te) {
      return te;
    }
    throw new AssertionError("expected a TransferException, got " + t, t);
  }
}

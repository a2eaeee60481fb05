package io.orbite.qualification.contract.suite;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The cross-transport contract suite over the file transport (the default I/O engine: io_uring
 * where the kernel has it, else FileChannel): the checks of {@link CrossTransportSuite}, with files
 * of the class directory as the far regions. The peer checks (unregister, restart, peer death,
 * cancel behind a held worker) have no file counterpart.
 */
class CrossTransportFileIT extends CrossTransportSuite {
  private final Arena arena = Arena.ofShared();
  private Path dataFile;

  CrossTransportFileIT() {
    super(Transport.FILE);
  }

  @Override
  EngineConfig transportConfig(String name) {
    return EngineConfig.defaults().withName(name);
  }

  @Override
  TransferEngine start() throws IOException {
    TransferEngine engine = TransferEngine.start(config("file-requester"));
    dataFile = dir.resolve("data.bin");
    data = file(engine, dataFile, LOCAL_BYTES, Access.READ_WRITE);
    readOnly = file(engine, dir.resolve("read-only.bin"), 64L << 10, Access.READ);
    writeOnly = file(engine, dir.resolve("write-only.bin"), 64L << 10, Access.WRITE);
    return engine;
  }

  /** A new file of {@code bytes}, mapped for the checks and opened as a segment granting access. */
  private Far file(TransferEngine engine, Path path, long bytes, Access access) throws IOException {
    MemorySegment mapped;
    try (FileChannel ch =
        FileChannel.open(
            path,
            StandardOpenOption.CREATE_NEW,
            StandardOpenOption.READ,
            StandardOpenOption.WRITE)) {
      // A mapping past the end extends the file, so the segment sees its whole length.
      mapped = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
    }
    return new Far.OfFile(mapped, engine.openFileSegment(path, access, WAIT));
  }

  @Override
  void stop() {
    arena.close();
  }

  @Override
  RemoteSegment reachData(TransferEngine other) {
    return other.openFileSegment(dataFile, Access.READ_WRITE, WAIT);
  }
}

package io.orbite.qualification.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The file ceiling: {@code fio --ioengine=io_uring} on the bench's own file, with the parameters
 * the engine runs with (block size, queue depth, buffered I/O, no fsync). Bytes per second as fio
 * reports them ({@code bw_bytes}), and IOPS.
 *
 * <p>{@code --mem_align=4096}: fio's buffers are page aligned, like the engine's registered memory.
 * Without it fio takes buffered-I/O buffers straight from malloc (16-byte aligned), and on this
 * machine kind (AMD EPYC, {@code rep movsb} copies) the kernel's copy from a page-cache page into a
 * buffer 16 bytes off a page boundary runs at about 0.4x of the aligned copy: fio's sequential READ
 * measured 4.3-6.1 GB/s unaligned and 9.9-10.7 GB/s aligned, and a bare ring read 4.8-5.4 GB/s into
 * memory 16 bytes off and 9.9-16 GB/s into page-aligned memory. Everything else is fio's default.
 */
final class Fio {
  private Fio() {}

  static boolean installed() {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
      if (new java.io.File(dir, "fio").canExecute()) {
        return true;
      }
    }
    return false;
  }

  /** One fio job's result: bytes per second and operations per second of its direction. */
  record Result(double bytesPerSecond, double iops) {}

  /**
   * Runs one job on {@code file} ({@code sizeBytes} long, already laid out).
   *
   * @param rw fio's {@code --rw}: write, read or randread
   * @param runtimeSeconds 0 for a run over the whole file, else a time-based run
   * @param extra further fio options (the batched random-read ceiling)
   */
  static Result run(
      Path file,
      long sizeBytes,
      String rw,
      String blockSize,
      int iodepth,
      int runtimeSeconds,
      String... extra)
      throws IOException, InterruptedException {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "fio",
                "--name=orbite-ceiling",
                "--filename=" + file,
                "--size=" + sizeBytes,
                "--ioengine=io_uring",
                "--iodepth=" + iodepth,
                "--rw=" + rw,
                "--bs=" + blockSize,
                "--direct=0",
                "--invalidate=0",
                "--mem_align=4096",
                "--output-format=json"));
    if (runtimeSeconds > 0) {
      cmd.add("--time_based");
      cmd.add("--runtime=" + runtimeSeconds);
    }
    cmd.addAll(List.of(extra));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("fio failed (" + String.join(" ", cmd) + "): " + new String(out));
    }
    String text = new String(out);
    JsonNode root = new ObjectMapper().readTree(text.substring(Math.max(0, text.indexOf('{'))));
    JsonNode dir = root.path("jobs").path(0).path(rw.contains("write") ? "write" : "read");
    double bw = dir.path("bw_bytes").asDouble(Double.NaN);
    double iops = dir.path("iops").asDouble(Double.NaN);
    if (Double.isNaN(bw) || Double.isNaN(iops)) {
      throw new IOException("fio printed no jobs[0]." + rw + " bw_bytes/iops: " + text);
    }
    return new Result(bw, iops);
  }
}

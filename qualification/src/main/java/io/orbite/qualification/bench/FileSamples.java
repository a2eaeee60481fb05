package io.orbite.qualification.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@link FileBench}'s rounds measured, sample by sample in the order taken, and the report
 * made of them: each figure's median (fio's as ceilings), each round's own value, the ratios of the
 * engine's medians to fio's, and each round's own ratio.
 */
final class FileSamples {
  /**
   * A ratio of the report: {@code figure}'s median (the engine's) over {@code ceiling}'s (fio's),
   * and with {@code perRound} each round's own too.
   */
  private record Ratio(String name, String figure, String ceiling, boolean perRound) {}

  private static final List<Ratio> RATIOS =
      List.of(
          new Ratio("seqwrite_1MiB_vs_fio", "seqwrite_1MiB_GBps", "fio_seqwrite_1MiB_GBps", true),
          new Ratio(
              "seqwrite_1MiB_vs_fio_scrambling",
              "seqwrite_1MiB_GBps",
              "fio_seqwrite_1MiB_scrambling_GBps",
              true),
          new Ratio("seqread_1MiB_vs_fio", "seqread_1MiB_GBps", "fio_seqread_1MiB_GBps", true),
          new Ratio(
              "randread_4KiB_qd32_vs_fio",
              "randread_4KiB_qd32_iops",
              "fio_randread_4KiB_qd32_iops",
              true),
          new Ratio(
              "randread_4KiB_qd32_vs_fio_batched",
              "randread_4KiB_qd32_iops",
              "fio_randread_4KiB_qd32_batched_iops",
              false));

  private final Map<String, List<Double>> samples = new LinkedHashMap<>();

  /** Adds one sample of {@code key}, after those already taken. */
  void add(String key, double value) {
    samples.computeIfAbsent(key, x -> new ArrayList<>()).add(value);
  }

  /** Prints the figures, ceilings and ratios of every sample so far ({@link BenchReport#print}). */
  void print(PrintStream human, boolean json) throws JsonProcessingException {
    Map<String, Double> figures = new LinkedHashMap<>();
    Map<String, Double> ceilings = new LinkedHashMap<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    samples.forEach((k, v) -> (k.startsWith("fio_") ? ceilings : figures).put(k, median(v)));
    samples.forEach(
        (k, v) -> {
          for (int i = 0; i < v.size() && v.size() > 1; i++) {
            (k.startsWith("fio_") ? ceilings : figures).put(k + "_round" + (i + 1), v.get(i));
          }
        });
    // The medians' ratios first, then each round's: the report lists them in this order.
    for (Ratio r : RATIOS) {
      ratio(ratios, r.name(), figures.get(r.figure()), ceilings.get(r.ceiling()));
    }
    for (Ratio r : RATIOS) {
      if (r.perRound()) {
        pairedRatios(ratios, samples, r.name(), r.figure(), r.ceiling());
      }
    }
    BenchReport.print(human, json, figures, ceilings, ratios);
  }

  private static double median(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    Collections.sort(s);
    return s.get(s.size() / 2);
  }

  private static void ratio(
      Map<String, Double> ratios, String name, Double figure, Double ceiling) {
    if (figure != null && ceiling != null && ceiling > 0) {
      ratios.put(name, figure / ceiling);
    }
  }

  /**
   * Each round's own ratio ({@code <name>_round<i>}): fio and the engine ran back to back in it, so
   * these show how much of a ratio's spread is the host's load moving between rounds.
   */
  private static void pairedRatios(
      Map<String, Double> ratios,
      Map<String, List<Double>> samples,
      String name,
      String figure,
      String ceiling) {
    List<Double> f = samples.get(figure);
    List<Double> c = samples.get(ceiling);
    if (f == null || c == null || f.size() != c.size() || f.size() < 2) {
      return;
    }
    for (int i = 0; i < f.size(); i++) {
      ratios.put(name + "_round" + (i + 1), f.get(i) / c.get(i));
    }
  }
}

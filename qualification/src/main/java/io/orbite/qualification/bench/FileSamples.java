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
    ratio(
        ratios,
        "seqwrite_1MiB_vs_fio",
        figures.get("seqwrite_1MiB_GBps"),
        ceilings.get("fio_seqwrite_1MiB_GBps"));
    ratio(
        ratios,
        "seqwrite_1MiB_vs_fio_scrambling",
        figures.get("seqwrite_1MiB_GBps"),
        ceilings.get("fio_seqwrite_1MiB_scrambling_GBps"));
    ratio(
        ratios,
        "seqread_1MiB_vs_fio",
        figures.get("seqread_1MiB_GBps"),
        ceilings.get("fio_seqread_1MiB_GBps"));
    ratio(
        ratios,
        "randread_4KiB_qd32_vs_fio",
        figures.get("randread_4KiB_qd32_iops"),
        ceilings.get("fio_randread_4KiB_qd32_iops"));
    ratio(
        ratios,
        "randread_4KiB_qd32_vs_fio_batched",
        figures.get("randread_4KiB_qd32_iops"),
        ceilings.get("fio_randread_4KiB_qd32_batched_iops"));
    pairedRatios(
        ratios, samples, "seqwrite_1MiB_vs_fio", "seqwrite_1MiB_GBps", "fio_seqwrite_1MiB_GBps");
    pairedRatios(
        ratios,
        samples,
        "seqwrite_1MiB_vs_fio_scrambling",
        "seqwrite_1MiB_GBps",
        "fio_seqwrite_1MiB_scrambling_GBps");
    pairedRatios(
        ratios, samples, "seqread_1MiB_vs_fio", "seqread_1MiB_GBps", "fio_seqread_1MiB_GBps");
    pairedRatios(
        ratios,
        samples,
        "randread_4KiB_qd32_vs_fio",
        "randread_4KiB_qd32_iops",
        "fio_randread_4KiB_qd32_iops");
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

package io.orbite.observability;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import kamon.Kamon;
import kamon.metric.Counter;
import kamon.metric.Gauge;
import kamon.metric.Histogram;
import kamon.metric.Instrument;
import kamon.metric.MeasurementUnit;
import kamon.tag.TagSet;

/**
 * One engine's Kamon instruments, each tagged {@code engine} with the engine's tag and made on
 * first use, always through a {@link Metric} (so each carries its help text), and the last value of
 * each cumulative figure sampled into a counter. {@link #close()} removes them all.
 */
final class Instruments implements AutoCloseable {
  private final String engineTag;
  private final Map<String, Instrument<?, ?>> instruments = new ConcurrentHashMap<>();

  /** Last sampled value of each cumulative source, by key; used by the sampler thread only. */
  private final Map<String, Long> last = new HashMap<>();

  Instruments(String engineTag) {
    this.engineTag = engineTag;
  }

  private TagSet tags(String... kv) {
    TagSet.Builder b = TagSet.builder().add("engine", engineTag);
    for (int i = 0; i < kv.length; i += 2) {
      b.add(kv[i], kv[i + 1]);
    }
    return b.build();
  }

  @SuppressWarnings("unchecked")
  private <I extends Instrument<?, ?>> I instrument(String key, Supplier<I> create) {
    return (I) instruments.computeIfAbsent(key, k -> create.get());
  }

  Counter counter(Metric m, String... kv) {
    return instrument(
        "c " + m.id + " " + String.join(",", kv),
        () -> Kamon.counter(m.id, m.help).withTags(tags(kv)));
  }

  Gauge gauge(Metric m, String... kv) {
    return instrument(
        "g " + m.id + " " + String.join(",", kv),
        () -> Kamon.gauge(m.id, m.help).withTags(tags(kv)));
  }

  Histogram nanosHistogram(Metric m, String... kv) {
    return instrument(
        "h " + m.id + " " + String.join(",", kv),
        () ->
            Kamon.histogram(m.id, m.help, MeasurementUnit.time().nanoseconds()).withTags(tags(kv)));
  }

  /** What {@code cumulative} grew by since the last sample under {@code key} (never negative). */
  long delta(String key, long cumulative) {
    long before = last.getOrDefault(key, 0L);
    last.put(key, cumulative);
    return Math.max(0, cumulative - before);
  }

  /** Adds to the counter what {@code cumulative} grew by since the last sample; returns that. */
  long sampleCounter(Metric m, long cumulative, String... kv) {
    long d = delta(m.id + " " + String.join(",", kv), cumulative);
    counter(m, kv).increment(d);
    return d;
  }

  @Override
  public void close() {
    List<Instrument<?, ?>> all = new ArrayList<>(instruments.values());
    instruments.clear();
    all.forEach(Instrument::remove);
  }
}

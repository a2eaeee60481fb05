package io.orbite.observability;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.orbite.engine.BuildInfo;
import io.orbite.engine.DashboardPanels;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.OwnerView;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.SourceLedger;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.spi.EngineTally;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The JSON documents of the dashboard's API (docs/operations.md describes each field). */
final class DashboardModel {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final TransferEngine engine;
  private final EngineTally tally;
  private final EngineMetrics metrics;
  private final ThroughputHistory history;
  private final long tickMillis;

  DashboardModel(
      TransferEngine engine,
      EngineTally tally,
      EngineMetrics metrics,
      ThroughputHistory history,
      long tickMillis) {
    this.engine = engine;
    this.tally = tally;
    this.metrics = metrics;
    this.history = history;
    this.tickMillis = tickMillis;
  }

  static String json(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON: " + e.getMessage(), e);
    }
  }

  Map<String, Object> engineInfo() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", engine.config().name());
    m.put("endpoint", engine.localSegment().endpoint());
    m.put("epoch", Long.toHexString(engine.localSegment().epoch()));
    m.put("tickMillis", tickMillis);
    BuildInfo b = BuildInfo.current();
    m.put(
        "build", Map.of("version", b.version(), "commit", b.shortCommit(), "jdk", b.runtimeJdk()));
    return m;
  }

  List<Map<String, Object>> owners(OwnerView view) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (OwnerView.Owner o : view.owners()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("path", o.path());
      int slash = o.path().lastIndexOf('/');
      m.put("parent", slash < 0 ? null : o.path().substring(0, slash));
      m.put("name", slash < 0 ? o.path() : o.path().substring(slash + 1));
      m.put("kind", o.kind());
      m.put("state", o.state().label());
      m.put("stateClass", o.stateClass().label());
      m.put("charges", new java.util.TreeMap<>(o.charges()));
      m.put("detail", o.detail());
      m.put("sinceMillis", o.sinceMillis());
      out.add(m);
    }
    return out;
  }

  List<Map<String, Object>> retired(OwnerView view) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (OwnerView.Retired r : view.retired()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("path", r.path());
      m.put("kind", r.kind());
      m.put("lastState", r.lastState().label());
      m.put("detail", r.detail());
      m.put("atMillis", r.atMillis());
      out.add(m);
    }
    return out;
  }

  List<Map<String, Object>> peers(OwnerView view) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (PeerEntry p : view.peers()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("endpoint", p.peer().endpoint());
      m.put("epoch", Long.toHexString(p.peer().epoch()));
      m.put("state", p.state().name().toLowerCase());
      m.put("references", p.references());
      m.put("shm", p.shared().name().toLowerCase());
      m.put("detail", p.detail());
      out.add(m);
    }
    return out;
  }

  List<Map<String, Object>> quarantined() {
    List<Map<String, Object>> out = new ArrayList<>();
    for (QuarantinedOwner q : engine.quarantined()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("owner", q.owner());
      m.put("kind", q.kind().name().toLowerCase());
      m.put("reason", q.reason());
      m.put("tasks", q.tasks());
      m.put("bytes", q.bytes());
      m.put("since", q.since().toString());
      out.add(m);
    }
    return out;
  }

  Map<String, Object> throughput() {
    List<Map<String, Object>> points = new ArrayList<>();
    for (ThroughputHistory.Point p : history.points()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("atMillis", p.atMillis());
      m.put("requesterBytes", p.total());
      m.put("byTransport", new java.util.TreeMap<>(p.requesterBytes()));
      m.put("sourceBytes", p.sourceBytes());
      m.put("servedByTransport", new java.util.TreeMap<>(p.servedBytes()));
      m.put("byLane", new java.util.TreeMap<>(p.laneBytes()));
      points.add(m);
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("intervalMillis", tickMillis);
    m.put("points", points);
    return m;
  }

  Map<String, Long> errors() {
    return metrics.errors();
  }

  /** The source side: {@code transports} and {@code requesters} (as in the snapshot). */
  Map<String, Object> source() {
    SourceLedger ledger = tally.sourceLedger();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("transports", SourceView.transports(engine, engine.ownerView(), ledger));
    m.put("requesters", SourceView.requesters(ledger));
    return m;
  }

  /** The latency panel's rows (as in the snapshot). */
  List<Map<String, Object>> latency() {
    return metrics.latencies();
  }

  /**
   * The panels modules added to the engine ({@link io.orbite.engine.DashboardPanels}): each with
   * {@code title}, {@code columns}, {@code rows} (lists of cells) and {@code detail}.
   */
  List<Map<String, Object>> panels() {
    List<Map<String, Object>> out = new ArrayList<>();
    for (DashboardPanels.Panel p : engine.dashboardPanels().snapshot()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("title", p.title());
      m.put("columns", p.columns());
      m.put("rows", p.rows());
      m.put("detail", p.detail());
      out.add(m);
    }
    return out;
  }

  OwnerView ownerSnapshot() {
    return engine.ownerView();
  }

  /** Everything the page draws, in one document (also each live update). */
  Map<String, Object> snapshot() {
    OwnerView view = engine.ownerView();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("engine", engineInfo());
    m.put("atMillis", System.currentTimeMillis());
    m.put("version", view.version());
    m.put("owners", owners(view));
    m.put("retired", retired(view));
    m.put("peers", peers(view));
    m.put("quarantined", quarantined());
    m.put("errors", errors());
    m.put("errorsSeen", metrics.errorsSeen());
    m.put("throughput", throughput());
    m.put("latency", metrics.latencies());
    m.put("healing", healing());
    SourceLedger ledger = tally.sourceLedger();
    m.put("transports", SourceView.transports(engine, view, ledger));
    m.put("requesters", SourceView.requesters(ledger));
    m.put("panels", panels());
    return m;
  }

  /**
   * The self-healing counts: {@code lanesLost}, {@code lanesRestored}, {@code keepaliveMisses},
   * {@code peersFenced}, {@code transportFailovers}, {@code readRetries}, {@code sourceIdleCloses}
   * and {@code sourceIncarnationsFenced}.
   */
  Map<String, Long> healing() {
    EngineCounters c = tally.snapshot();
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("lanesLost", c.lanesLost());
    m.put("lanesRestored", c.lanesRestored());
    m.put("keepaliveMisses", c.keepaliveMisses());
    m.put("peersFenced", c.peersFenced());
    m.put("transportFailovers", c.transportFailovers());
    m.put("readRetries", c.readRetries());
    m.put("sourceIdleCloses", c.sourceIdleCloses());
    m.put("sourceIncarnationsFenced", c.sourceIncarnationsFenced());
    return m;
  }
}

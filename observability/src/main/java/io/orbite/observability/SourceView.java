package io.orbite.observability;

import io.orbite.engine.Op;
import io.orbite.engine.OwnerView;
import io.orbite.engine.SourceLedger;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.Transport;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The dashboard's source side and transport table, from the engine's {@link SourceLedger} and owner
 * view: what each transport is (serving, off by configuration, ...), what it served, and the
 * requesters connected now with their epochs.
 */
final class SourceView {
  private SourceView() {}

  /** The transports the table shows, with the owner kind each one's supervisor reports. */
  private static final Map<Transport, String> KINDS =
      Map.of(
          Transport.TCP, "TcpTransport",
          Transport.SHM, "ShmTransport",
          Transport.RDMA, "RdmaTransport",
          Transport.FILE, "FileTransport");

  /**
   * One row per transport: {@code transport}; {@code state} and {@code stateClass}, its
   * supervisor's (or {@code off} when it runs none); {@code detail}; {@code source}: whether it
   * serves peers here ({@code on}, {@code off} by configuration, or {@code none}: files are local);
   * the bytes it {@code servedRead} and {@code servedWritten}; and the requester incarnations
   * connected over it now ({@code requesters}).
   */
  static List<Map<String, Object>> transports(
      TransferEngine engine, OwnerView view, SourceLedger ledger) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (Transport t : List.of(Transport.TCP, Transport.SHM, Transport.RDMA, Transport.FILE)) {
      OwnerView.Owner owner =
          view.owners().stream()
              .filter(o -> o.kind().equals(KINDS.get(t)))
              .findFirst()
              .orElse(null);
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("transport", EngineMetrics.label(t));
      String state = owner == null ? "off" : owner.state().label();
      m.put("state", state);
      m.put("stateClass", owner == null ? "off" : owner.stateClass().label());
      m.put("detail", owner == null ? "not running here" : owner.detail());
      m.put("source", source(engine, t, state));
      m.put("servedRead", ledger.bytes(t, Op.READ));
      m.put("servedWritten", ledger.bytes(t, Op.WRITE));
      m.put(
          "requesters",
          ledger.connected().stream()
              .filter(c -> c.transport() == t)
              .map(c -> c.requester() + " " + c.requesterEpoch())
              .distinct()
              .count());
      out.add(m);
    }
    return out;
  }

  /**
   * Whether {@code t} serves peers from this engine: SHM only with {@code shm.enabled} (this
   * engine's allocations in memfds), RDMA only with {@code rdma.enabled}, TCP always.
   */
  private static String source(TransferEngine engine, Transport t, String state) {
    return switch (t) {
      case TCP -> "on";
      case SHM -> engine.config().shm().enabled() ? "on" : "off";
      case RDMA -> engine.config().rdma().enabled() && !state.equals("off") ? "on" : "off";
      default -> "none";
    };
  }

  /**
   * One row per requester: {@code requester} (its label), {@code epoch} (hex), {@code connected}
   * (whether a connection of it is open now), {@code connections} by transport, {@code sinceMillis}
   * (its oldest open connection, 0 when none), and the bytes {@code served} to it by transport
   * ({@code {tcp: {read: n, write: n}}}), with the totals {@code read} and {@code written}.
   * Requesters served but no longer connected stay listed (the ledger is bounded).
   */
  static List<Map<String, Object>> requesters(SourceLedger ledger) {
    Map<String, Map<String, Object>> rows = new TreeMap<>();
    for (SourceLedger.Connected c : ledger.connected()) {
      Map<String, Object> m = row(rows, c.requester(), c.requesterEpoch());
      m.put("connected", true);
      @SuppressWarnings("unchecked")
      Map<String, Integer> connections = (Map<String, Integer>) m.get("connections");
      connections.merge(EngineMetrics.label(c.transport()), c.connections(), Integer::sum);
      long since = (long) m.get("sinceMillis");
      m.put("sinceMillis", since == 0 ? c.sinceMillis() : Math.min(since, c.sinceMillis()));
    }
    for (SourceLedger.Served s : ledger.served()) {
      Map<String, Object> m = row(rows, s.requester(), s.requesterEpoch());
      @SuppressWarnings("unchecked")
      Map<String, Map<String, Long>> served = (Map<String, Map<String, Long>>) m.get("served");
      served
          .computeIfAbsent(EngineMetrics.label(s.transport()), k -> new TreeMap<>())
          .merge(EngineMetrics.label(s.op()), s.bytes(), Long::sum);
      String total = s.op() == Op.READ ? "read" : "written";
      m.put(total, (long) m.get(total) + s.bytes());
    }
    return new ArrayList<>(rows.values());
  }

  /**
   * The row of {@code requester}: one per label and epoch, except that the ledger's bytes, kept by
   * label, go to its row of the latest epoch (made if none is connected).
   */
  private static Map<String, Object> row(
      Map<String, Map<String, Object>> rows, String requester, long epoch) {
    return rows.computeIfAbsent(
        requester + "\u0000" + Long.toHexString(epoch),
        k -> {
          Map<String, Object> m = new LinkedHashMap<>();
          m.put("requester", requester);
          m.put("epoch", Long.toHexString(epoch));
          m.put("connected", false);
          m.put("connections", new TreeMap<String, Integer>());
          m.put("sinceMillis", 0L);
          m.put("served", new TreeMap<String, Map<String, Long>>());
          m.put("read", 0L);
          m.put("written", 0L);
          return m;
        });
  }
}

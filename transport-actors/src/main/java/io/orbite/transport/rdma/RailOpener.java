package io.orbite.transport.rdma;

import io.orbite.config.ConfigException;
import io.orbite.config.RdmaConfig;
import io.orbite.config.RdmaPriorityMatrix;
import io.orbite.config.RdmaSelectionConfig;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.TransportContext;
import io.orbite.nativebind.verbs.NativeVerbs;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.nativebind.verbs.soft.SoftFabric;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.nativebind.verbs.soft.SoftVerbs;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;

/**
 * Opens the RDMA transport's rails when it starts, on the blocking-I/O executor: the verbs provider
 * ({@code rdma.provider}), its devices ({@code rdma.devices}, or all) as rails, and the selection
 * policy over them ({@code rdma.selection}). A failure closes what was opened and names why; the
 * transport then refuses every open.
 */
final class RailOpener {
  /** The rails the transport opened, and the selection policy over them. */
  record Opened(List<Rail> rails, RailPolicy policy) {}

  private final RdmaConfig config;
  private final TransportContext context;

  RailOpener(TransportContext context) {
    this.context = context;
    this.config = context.config().rdma();
  }

  /**
   * The software provider's devices: {@code soft0}... ({@code rdma.softwareDevices} of them), each
   * listening on its address ({@code rdma.softwareAddresses}, device i on entry i modulo the list's
   * length, or all on {@code rdma.softwareAddress}), so rails can run over different links.
   */
  private SoftFabric softwareFabric() {
    List<SoftFabric.DeviceSpec> devices = new ArrayList<>();
    for (int i = 0; i < config.softwareDevices(); i++) {
      devices.add(
          SoftFabric.DeviceSpec.of(
              "soft" + i, config.softwareAddressOf(i), 0x0200_5e00_0000_0000L | (i + 1)));
    }
    return SoftFabric.of(devices);
  }

  /**
   * The provider's devices (those {@code rdma.devices} names, or all), opened as rails, and the
   * selection policy over them ({@code rdma.selection}: the mask and the matrix checked against the
   * opened devices, the topology file read here, off the mailbox). A failure closes what was
   * opened.
   */
  Opened openRails() {
    Verbs verbs =
        "native".equals(config.provider())
            ? NativeVerbs.system()
            : SoftVerbs.create(
                softwareFabric(),
                context.hooks().rdmaFaults() instanceof SoftFaults f ? f : SoftFaults.none());
    VerbsResult<List<Verbs.Device>> listed = verbs.getDeviceList();
    if (!listed.ok()) {
      throw new IllegalStateException(verbs.provider() + ": " + listed.describe());
    }
    List<Verbs.Device> chosen = new ArrayList<>();
    for (Verbs.Device d : listed.value()) {
      if (config.devices().isEmpty() || config.devices().contains(d.name())) {
        chosen.add(d);
      }
    }
    for (String wanted : config.devices()) {
      if (listed.value().stream().noneMatch(d -> d.name().equals(wanted))) {
        throw new IllegalStateException(
            "rdma.devices names "
                + wanted
                + ", which "
                + verbs.provider()
                + " does not list (it lists "
                + listed.value().stream().map(Verbs.Device::name).toList()
                + ")");
      }
    }
    if (chosen.isEmpty()) {
      throw new IllegalStateException(verbs.provider() + " lists no RDMA device");
    }
    List<Rail> opened = new ArrayList<>();
    try {
      for (Verbs.Device d : chosen) {
        opened.add(
            Rail.open(verbs, d, opened.size(), config, context.registry(), context.counters()));
        opened.getLast().hooks = context.hooks();
      }
      return new Opened(opened, policy(opened));
    } catch (RuntimeException e) {
      opened.forEach(Rail::close);
      throw e;
    }
  }

  /**
   * {@code rdma.selection} over the opened rails; the inline matrix wins over the topology file.
   *
   * @throws RailPolicy.Refused for a mask or matrix name that is not an opened device
   * @throws ConfigException for a topology file that cannot be read or parsed
   */
  private RailPolicy policy(List<Rail> opened) {
    RdmaSelectionConfig selection = config.selection();
    RdmaPriorityMatrix matrix = selection.priorityMatrix();
    if (matrix.isEmpty() && !selection.customJsonPath().isEmpty()) {
      Path file;
      try {
        file = Path.of(selection.customJsonPath());
      } catch (InvalidPathException e) {
        throw new ConfigException(
            "rdma.selection.customJsonPath", "not a path: " + e.getMessage(), e);
      }
      matrix = RdmaPriorityMatrix.readFile(file);
    }
    return RailPolicy.of(
        selection,
        opened.stream().map(r -> r.device).toList(),
        opened.stream().mapToInt(r -> r.numaNode).toArray(),
        matrix);
  }

  /** The rail circuit (C13) with the {@code rdma.rail*} thresholds. */
  static RailHealth health(RdmaConfig config) {
    return new RailHealth(
        new RailHealth.Policy(
            config.railErrors(),
            Duration.ofMillis(config.railErrorWindowMillis()),
            Duration.ofMillis(config.railCooldownMillis()),
            Duration.ofMillis(config.railProbeIntervalMillis()),
            Duration.ofMillis(config.railMaxCooldownMillis()),
            RailHealth.Policy.DEFAULTS.maxPairs()),
        System::nanoTime);
  }

  /** Why the transport refuses every open after {@link #openRails} failed with {@code failure}. */
  static String refusal(Throwable failure) {
    Throwable cause =
        failure instanceof CompletionException c && c.getCause() != null ? c.getCause() : failure;
    return (cause instanceof RailPolicy.Refused || cause instanceof ConfigException
            ? "RDMA rail selection refused the rails: "
            : "no RDMA rail: ")
        + cause.getMessage();
  }
}

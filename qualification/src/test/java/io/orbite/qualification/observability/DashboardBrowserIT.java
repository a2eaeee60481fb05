package io.orbite.qualification.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.DashboardConfig;
import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.nativebind.testkit.Prerequisite;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The dashboard in a real headless Chromium (Debian's chromium and chromedriver, which the launcher
 * and CI install): the page draws the live supervision tree; a batch's owner appears when it is
 * allocated and leaves (to the retired list) when it is freed; throughput moves while it reads
 * (every byte verified); killing the peer's process retires its endpoint and marks the peer closed.
 * A source's page (an engine process serving a requester of this JVM over TCP) shows the bytes it
 * served per transport, exactly what the verified READs and WRITEs moved (and its metrics count the
 * same), lists the requester with its epoch while it is connected, shows RDMA (off by
 * configuration) as off, not as a fault, and SHM as not serving peers. Screenshots are saved under
 * target/dashboard-screenshots/.
 */
class DashboardBrowserIT {
  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path logs;

  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
  private static final Path SHOTS = Path.of("target", "dashboard-screenshots");
  private static final long REGION = 32L << 20;
  private static final long SOURCE_SEED = 41;
  private static final long GUARD_SEED = 0x6A4D_0042L;
  private static final long WRITE_SEED = 0x3717_0043L;

  private EngineProcess peer;
  private TransferEngine engine;
  private WebDriver browser;

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
    if (engine != null) {
      engine.close(Duration.ofSeconds(20));
    }
    if (peer != null) {
      peer.close();
    }
  }

  private static void requireBrowser() {
    Prerequisite.require(
        Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER),
        CHROMIUM
            + " or "
            + CHROMEDRIVER
            + " missing (apt-get install chromium chromium-driver; .ci/run and ./orbite test install them "
            + "as root)");
  }

  private WebDriver chromium() {
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--no-first-run",
        "--disable-extensions");
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(CHROMEDRIVER.toFile())
            .usingAnyFreePort()
            .build();
    return new ChromeDriver(service, options);
  }

  private void until(String what, java.util.function.Function<WebDriver, Boolean> condition) {
    new WebDriverWait(browser, Duration.ofSeconds(30), Duration.ofMillis(100))
        .withMessage(
            () -> what + "; page text: " + browser.findElement(By.tagName("body")).getText())
        .until(condition);
  }

  /**
   * An attribute of the first element matching {@code css}, read in one script call: the page
   * redraws on every update, so an element found in one call may be gone by the next.
   */
  private String attribute(String css, String name) {
    Object v =
        ((org.openqa.selenium.JavascriptExecutor) browser)
            .executeScript(
                "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
                css,
                name);
    return v == null ? null : v.toString();
  }

  private int count(String css) {
    return browser.findElements(By.cssSelector(css)).size();
  }

  /** The bytes the throughput chart shows over its window (0 before the first update). */
  private long windowBytes() {
    String v = attribute("#rate", "data-window-bytes");
    return v == null ? 0 : Long.parseLong(v);
  }

  private void screenshot(String name) throws Exception {
    Files.createDirectories(SHOTS);
    byte[] png = ((org.openqa.selenium.TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES);
    assertTrue(
        png.length > 1000 && png[1] == 'P' && png[2] == 'N' && png[3] == 'G', "a PNG screenshot");
    Files.write(SHOTS.resolve(name), png);
  }

  @Test
  void pageShowsTheLiveTreeBatchesThroughputAndAKilledPeer() throws Exception {
    requireBrowser();
    peer = EngineProcess.start("dashboard-peer", logs, Map.of());
    long remote = Long.parseLong(peer.call("ALLOC " + REGION + " READ_WRITE"));
    peer.call("FILL " + remote + " " + SOURCE_SEED);
    // A killed peer's endpoint is watched for a replacement for tcp.reconnectGiveUpMillis before
    // the endpoint retires: short here.
    EngineConfig config =
        EngineConfig.defaults()
            .withName("dashboard-it")
            .withTcp(TcpConfig.defaults().withReconnect(20, 200, 3_000));
    engine =
        TransferEngine.start(
            config.withObservability(
                config
                    .observability()
                    .withDashboard(DashboardConfig.defaults().withEnabled(true))
                    .withTickMillis(200)));
    String url = engine.observabilityUrls().get("dashboard");
    assertTrue(url != null && url.startsWith("http://127.0.0.1:"), "dashboard on loopback: " + url);

    browser = chromium();
    browser.get(url);
    until(
        "the engine's owners drawn",
        d ->
            count("#tree li[data-kind=EngineGuardian]") == 1
                && count("#tree li[data-kind=Admission][data-state=open]") == 1
                && count("#tree li[data-kind=Registry]") == 1
                && count("#tree li[data-kind=TcpTransport]") == 1);

    // A table an optional module adds (the peer directory's members): drawn as its own section.
    AutoCloseable panel =
        engine
            .dashboardPanels()
            .add(
                "directory",
                List.of("engine", "endpoint"),
                () -> List.of(List.of("prefill", "10.0.0.11:4000")));
    until(
        "a module's panel drawn with its rows",
        d ->
            count("section[data-panel=directory] th") == 2
                && count("section[data-panel=directory] tr[data-key=prefill] td") == 2);
    panel.close();
    until("a closed panel leaves the page", d -> count("section[data-panel=directory]") == 0);

    RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
    String epochHex = Long.toHexString(peer.epoch());
    until(
        "the peer active with its epoch, and its endpoint owner",
        d ->
            count(
                        "#peers tr[data-endpoint='"
                            + peer.endpoint()
                            + "'][data-epoch='"
                            + epochHex
                            + "'][data-state=active]")
                    == 1
                && count("#tree li[data-kind=TcpEndpoint][data-state=active]") == 1);

    // A batch: its owner appears as soon as it is allocated.
    RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(local.segment(), 0, REGION, GUARD_SEED, 0);
    Batch batch = engine.allocateBatch(64);
    until("the batch owner appears", d -> count("#tree li[data-kind=BatchActor]") == 1);

    // Throughput moves while the batch reads; every byte checked after each round.
    long regionId = segment.regions().getFirst().regionId();
    long moved = 0;
    int rounds = 0;
    while (rounds < 50 && windowBytes() == 0) {
      List<TransferRequest> reads = new ArrayList<>();
      List<Span> spans = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        long at = i * (8L << 20) + 64;
        long size = (8L << 20) - 128 - i;
        reads.add(TransferRequest.read(local, at, segment, regionId, at, size));
        spans.add(new Span(at, size, SOURCE_SEED, at));
        moved += size;
      }
      batch.submit(reads);
      for (TaskResult t : batch.await(Duration.ofSeconds(60)).tasks()) {
        assertTrue(t.completed(), t.toString());
      }
      assertEquals(
          -1,
          RegionCheck.check(local.segment(), spans, GUARD_SEED),
          "every byte read and every guard");
      Pattern.fill(local.segment(), 0, REGION, GUARD_SEED, 0);
      rounds++;
      if (rounds % 4 == 0) {
        batch.free();
        batch = engine.allocateBatch(64);
      }
    }
    assertTrue(moved > 0);
    until("throughput moved on the chart", d -> windowBytes() > 0);
    screenshot("1-transfer.png");

    // Free the batch: the engine keeps it for the next allocation of its capacity, so its owner
    // stays
    // in the tree as pooled. A batch of a capacity too large to keep is retired when freed.
    String lastBatch = attribute("#tree li[data-kind=BatchActor]", "data-path");
    batch.free();
    until(
        "the freed batch is shown pooled",
        d ->
            count("#tree li[data-kind=BatchActor]") == 1
                && count(
                        "#tree li[data-kind=BatchActor][data-state=pooled][data-path='"
                            + lastBatch
                            + "']")
                    == 1);
    Batch large = engine.allocateBatch(io.orbite.engine.batch.BatchPool.MAX_POOLED_CAPACITY + 1);
    until("the large batch appears", d -> count("#tree li[data-kind=BatchActor]") == 2);
    String largePath =
        engine.ownerView().owners().stream()
            .filter(o -> o.kind().equals("BatchActor") && !o.path().equals(lastBatch))
            .findFirst()
            .orElseThrow()
            .path();
    large.free();
    until(
        "the large batch leaves the tree and is retired",
        d ->
            count("#tree li[data-kind=BatchActor]") == 1
                && count("#retired tr[data-path='" + largePath + "']") == 1);

    // Kill the peer's process: its endpoint refuses the lanes' reconnection, so the peer is lost;
    // once the endpoint stops watching for a replacement (tcp.reconnectGiveUpMillis, short here)
    // it is retired.
    peer.kill();
    until(
        "the endpoint retired and the peer closed or fenced",
        d ->
            count("#tree li[data-kind=TcpEndpoint]") == 0
                && count("#retired tr[data-path*='endpoint-']") >= 1
                && count("#peers tr[data-endpoint='" + peer.endpoint() + "'][data-state=active]")
                    == 0
                && count("#peers tr[data-endpoint='" + peer.endpoint() + "']") == 1);
    screenshot("2-peer-killed.png");
    assertTrue(Files.size(SHOTS.resolve("2-peer-killed.png")) > 1000);
  }

  @Test
  void aSourcesPageShowsTheBytesItServedPerTransportAndItsRequesters() throws Exception {
    requireBrowser();
    peer =
        EngineProcess.start(
            "dashboard-source",
            logs,
            Map.of(
                "ORBITE_CONF",
                "{\"observability\":{\"dashboard\":{\"enabled\":true},"
                    + "\"metrics\":{\"enabled\":true},\"tickMillis\":200}}"));
    Map<String, String> urls = new java.util.HashMap<>();
    for (String kv : peer.call("URLS").split(" ")) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        urls.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    String dashboard = urls.get("dashboard");
    String metrics = urls.get("metrics");
    assertTrue(dashboard != null && metrics != null, "the source serves both: " + urls);
    long remote = Long.parseLong(peer.call("ALLOC " + REGION + " READ_WRITE"));
    peer.call("FILL " + remote + " " + SOURCE_SEED);

    engine = TransferEngine.start(EngineConfig.defaults().withName("dashboard-requester"));
    String epochHex = Long.toHexString(engine.localSegment().epoch());
    String label = "127.0.0.1@" + epochHex;
    RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
    long regionId = segment.regions().getFirst().regionId();
    RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
    Pattern.fill(local.segment(), 0, REGION, GUARD_SEED, 0);

    // READs over TCP, at odd offsets and sizes; every byte and guard checked.
    List<TransferRequest> reads = new ArrayList<>();
    List<Span> readSpans = new ArrayList<>();
    long readTotal = 0;
    long[] sizes = {4093, 1 << 20, 3 * (1 << 20) + 5, 65_536, 123};
    long at = 17;
    for (long size : sizes) {
      reads.add(
          TransferRequest.read(local, at, segment, regionId, at + 11, size)
              .withTransport(Transport.TCP));
      readSpans.add(new Span(at, size, SOURCE_SEED, at + 11));
      readTotal += size;
      at += size + 4099;
    }
    Batch batch = engine.allocateBatch(8);
    batch.submit(reads);
    for (TaskResult t : batch.await(Duration.ofSeconds(60)).tasks()) {
      assertTrue(t.completed(), t.toString());
    }
    assertEquals(
        -1, RegionCheck.check(local.segment(), readSpans, GUARD_SEED), "every read byte, guards");
    batch.free();

    // WRITEs over TCP into the source's region; the source checks its whole region.
    Pattern.fill(local.segment(), 0, REGION, WRITE_SEED, 0);
    long writeTotal = 2L * (1 << 20) + 77;
    Batch writes = engine.allocateBatch(2);
    writes.submit(
        List.of(
            TransferRequest.write(local, 3, segment, regionId, 8 * (1 << 20) + 1, writeTotal)
                .withTransport(Transport.TCP),
            TransferRequest.write(local, 5000, segment, regionId, 12 * (1 << 20) + 3, 4097)
                .withTransport(Transport.TCP)));
    for (TaskResult t : writes.await(Duration.ofSeconds(60)).tasks()) {
      assertTrue(t.completed(), t.toString());
    }
    writes.free();
    assertEquals(
        "OK",
        peer.verify(
            remote,
            SOURCE_SEED,
            List.of(
                new Span(8 * (1 << 20) + 1, writeTotal, WRITE_SEED, 3),
                new Span(12 * (1 << 20) + 3, 4097, WRITE_SEED, 5000))),
        "every written byte at the source, and its untouched bytes");
    writeTotal += 4097;
    long read = readTotal;
    long written = writeTotal;

    browser = chromium();
    browser.get(dashboard);
    String row = "#requesters tr[data-requester='" + label + "'][data-epoch='" + epochHex + "']";
    until(
        "the requester listed with its epoch, connected over TCP, with the bytes served to it",
        d ->
            count(row + "[data-connected=true]") == 1
                && Long.parseLong(attribute(row, "data-connections-tcp")) >= 1
                && String.valueOf(read).equals(attribute(row, "data-read-tcp"))
                && String.valueOf(written).equals(attribute(row, "data-written-tcp")));
    until(
        "the TCP transport's served bytes, exactly those verified",
        d ->
            String.valueOf(read)
                    .equals(attribute("#transports tr[data-transport=tcp]", "data-served-read"))
                && String.valueOf(written)
                    .equals(attribute("#transports tr[data-transport=tcp]", "data-served-written"))
                && "1".equals(attribute("#transports tr[data-transport=tcp]", "data-requesters")));
    until(
        "the served chart moved for TCP",
        d -> {
          String w = attribute("#served tr[data-transport=tcp]", "data-window-bytes");
          return w != null && Long.parseLong(w) > 0 && Long.parseLong(w) <= read + written;
        });
    assertEquals("0", attribute("#served tr[data-transport=rdma]", "data-window-bytes"));
    // RDMA is off by configuration here: shown off (grey), not a red closed or fenced.
    assertEquals(1, count("#transports tr[data-transport=rdma][data-state=off][data-source=off]"));
    assertEquals(1, count("#transports tr[data-transport=rdma] td:nth-child(2) span.state.off"));
    assertEquals(0, count("#transports tr[data-transport=rdma] span.state.fenced"));
    assertEquals(1, count("#tree li[data-kind=RdmaTransport][data-state=off]"));
    assertEquals(0, count("#tree li[data-kind=RdmaTransport] span.state.fenced"));
    // shm.enabled is false on the source: SHM does not serve peers from it.
    assertEquals(1, count("#transports tr[data-transport=shm][data-source=off]"));
    screenshot("3-source.png");

    // Its metrics count the same bytes, labelled by transport, op and requester.
    String scrape = Http.get(metrics).body();
    Map<String, String> tcpRead = Map.of("transport", "tcp", "op", "read", "requester", label);
    Map<String, String> tcpWrite = Map.of("transport", "tcp", "op", "write", "requester", label);
    assertEquals(read, (long) Http.sample(scrape, "orbite_source_bytes_total", tcpRead), scrape);
    assertEquals(written, (long) Http.sample(scrape, "orbite_source_bytes_total", tcpWrite));
    assertEquals(
        1.0, Http.sample(scrape, "orbite_source_requesters", Map.of("transport", "tcp")), scrape);
    assertTrue(
        scrape.contains("# HELP orbite_source_bytes_total "), "the metric's HELP line: " + scrape);

    // The requester closes: its lanes end, and it stays listed, disconnected, with its bytes.
    engine.close(Duration.ofSeconds(20));
    engine = null;
    until(
        "the requester disconnected, its bytes kept",
        d ->
            count(row + "[data-connected=false]") == 1
                && String.valueOf(read).equals(attribute(row, "data-read-tcp"))
                && "0".equals(attribute("#transports tr[data-transport=tcp]", "data-requesters")));
  }
}

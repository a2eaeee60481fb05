package io.orbite.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Successful loading through {@link EngineConfig#fromJson(String)} and the {@link
 * EngineConfig#toJson()} round trip.
 */
class EngineConfigLoadingTest {
  static final List<NumericKey> KEYS = NumericKey.ALL;

  @ParameterizedTest
  @ValueSource(strings = {"{}", " { } ", "\n\t{\r\n}\n", "{\"tcp\":{},\"budgets\":{}}"})
  void emptyObjectsGiveTheDefaults(String json) {
    assertEquals(EngineConfig.defaults(), EngineConfig.fromJson(json));
  }

  @Test
  void rdmaCompletionEventsIsReadAsABooleanAndNothingElse() {
    assertTrue(
        EngineConfig.fromJson("{\"rdma\":{\"completionEvents\":true}}").rdma().completionEvents());
    assertEquals(false, EngineConfig.defaults().rdma().completionEvents(), "off by default");
    ConfigException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            ConfigException.class,
            () -> EngineConfig.fromJson("{\"rdma\":{\"completionEvents\":1}}"));
    assertTrue(e.getMessage().startsWith("rdma.completionEvents"), e::getMessage);
    assertTrue(
        EngineConfig.defaults().rdma().withCompletionEvents(true).withLanes(3).completionEvents(),
        "kept by the other withers");
  }

  @Test
  void partialDocumentChangesOnlyTheKeysItNames() {
    EngineConfig config = EngineConfig.fromJson("{\"tcp\":{\"lanes\":4}}");
    assertEquals(4, config.tcp().lanes());
    assertEquals(EngineConfig.defaults().withTcp(TcpConfig.defaults().withLanes(4)), config);
  }

  @Test
  void partialDocumentAcrossSectionsIsMergedWithDefaults() {
    EngineConfig config =
        EngineConfig.fromJson(
            """
                {
                  "name": "edge-7",
                  "listen": {"port": 7070},
                  "slicing": {"baseBlockBytes": 1048576, "maxWriteSlices": 8},
                  "timeouts": {"describeTimeoutMillis": 250}
                }
                """);
    EngineConfig expected =
        EngineConfig.defaults()
            .withName("edge-7")
            .withListen(new ListenConfig("127.0.0.1", 7070))
            .withSlicing(new SlicingConfig(1048576, 64, 8))
            .withTimeouts(new TimeoutConfig(30000, 30000, 250));
    assertEquals(expected, config);
  }

  @ParameterizedTest(name = "{0}")
  @FieldSource("KEYS")
  void eachKeyIsReadAtBothEndsOfItsRange(NumericKey key) {
    assertEquals(
        key.min(), key.get().apply(EngineConfig.fromJson(key.document(Long.toString(key.min())))));
    assertEquals(
        key.max(), key.get().apply(EngineConfig.fromJson(key.document(Long.toString(key.max())))));
  }

  @Test
  void negativeZeroAndNoisyWhitespaceAreOrdinaryJson() {
    assertEquals(0, EngineConfig.fromJson("{\"listen\":{\"port\":-0}}").listen().port());
    assertEquals(3, EngineConfig.fromJson(" {\n \"tcp\" :\t{ \"lanes\" : 3 } } \n").tcp().lanes());
  }

  @Test
  void stringsAreUnescapedBeforeValidation() {
    assertEquals("a-b", EngineConfig.fromJson("{\"name\":\"a\\u002db\"}").name());
    assertEquals("::1", EngineConfig.fromJson("{\"listen\":{\"host\":\"::1\"}}").listen().host());
  }

  @Test
  void fullDocumentSetsEveryKey() {
    EngineConfig config =
        EngineConfig.fromJson(
            """
                {
                  "name": "full",
                  "listen": {"host": "10.0.0.1", "port": 9000, "readyAtStart": false},
                  "tcp": {"lanes": 8, "socketBufferBytes": 65536, "maxFramePayloadBytes": 4096,
                          "connectTimeoutMillis": 1, "laneWindowFrames": 65536, "laneWindowBytes": 4294967296,
                          "retryReadOnOtherLane": false, "reconnectInitialBackoffMillis": 7,
                          "reconnectMaxBackoffMillis": 70, "reconnectGiveUpMillis": 7000,
                          "waitWhileReconnecting": false, "keepaliveIntervalMillis": 300,
                          "livenessTimeoutMillis": 900, "sourceIdleTimeoutMillis": 0},
                  "budgets": {"maxBatches": 1, "maxBatchCapacity": 1048576, "maxTasksInFlight": 16777216,
                              "maxInflightBytes": 1099511627776, "maxEndpoints": 4096,
                              "maxRegistrations": 1000000, "maxPeerSegments": 65536},
                  "slicing": {"baseBlockBytes": 67108864, "maxReadSlices": 1024, "maxWriteSlices": 1},
                  "timeouts": {"defaultDeadlineMillis": 86400000, "destructionWindowMillis": 3600000,
                               "describeTimeoutMillis": 600000},
                  "retry": {"maxTransportFailovers": 4},
                  "merge": {"enabled": false, "maxBytes": 4096},
                  "shm": {"enabled": true, "maxMappings": 65536, "lanes": 16},
                  "file": {"engine": "channel", "lanes": 64, "queueDepth": 4096, "maxChunkBytes": 4096,
                           "maxFileSegments": 1, "channelThreads": 256},
                  "rdma": {"enabled": true, "provider": "native", "devices": ["mlx5_0", "mlx5_1"],
                           "lanes": 16, "softwareAddress": "10.0.0.2", "softwareDevices": 8,
                           "maxEndpoints": 4096, "maxGrants": 1, "maxSendWr": 4096, "maxCqes": 16,
                           "railErrors": 1000, "railErrorWindowMillis": 3600000,
                           "railCooldownMillis": 3600000, "railMaxCooldownMillis": 86400000,
                           "railProbeIntervalMillis": 3600000, "priorityAgingMillis": 60000,
                           "priorityAgingPerEntry": true,
                           "softwareAddresses": ["10.0.0.2", "10.0.1.2"], "gidIndex": 255,
                           "maxDirectBytes": 1099511627776,
                           "selection": {"deviceMask": ["mlx5_1"], "preferredNumaNode": 1023,
                                         "strictLocalNuma": true,
                                         "customJsonPath": "/etc/orbite/topology.json"}},
                  "notifications": {"inboxCapacity": 1048576, "inboxBytes": 17179869184,
                                    "maxTagBytes": 4096, "maxPayloadBytes": 0,
                                    "answerTimeoutMillis": 600000},
                  "observability": {"metrics": {"enabled": true, "host": "0.0.0.0", "port": 9100},
                                    "dashboard": {"enabled": true, "host": "::1", "port": 65535},
                                    "tickMillis": 60000},
                  "directory": {"publish": ["kv-pool", "a/b:c.d_e-f"], "readConsistency": "all",
                                "writeConsistency": "local", "consistencyTimeoutMillis": 60000,
                                "refreshMillis": 50},
                  "security": {"mode": "auto", "secretFile": "/etc/orbite/secret",
                               "identityKeyFile": "/etc/orbite/full.key",
                               "peerKeysDir": "/etc/orbite/peers"}
                }
                """);
    assertEquals(
        new EngineConfig(
            "full",
            new ListenConfig("10.0.0.1", 9000, false),
            new TcpConfig(
                8, 65536, 4096, 1, 65536, 4294967296L, false, 7, 70, 7000, false, 300, 900, 0L),
            new BudgetConfig(1, 1048576, 16777216, 1099511627776L, 4096, 1000000, 65536),
            new SlicingConfig(67108864, 1024, 1),
            new TimeoutConfig(86400000, 3600000, 600000),
            new RetryConfig(4),
            new MergeConfig(false, 4096),
            new ShmConfig(true, 65536, 16),
            new FileConfig("channel", 64, 4096, 4096, 1, 256),
            new RdmaConfig(
                true,
                "native",
                List.of("mlx5_0", "mlx5_1"),
                16,
                "10.0.0.2",
                8,
                4096,
                1,
                4096,
                16,
                1000,
                3600000,
                3600000,
                86400000,
                3600000,
                60000,
                true,
                List.of("10.0.0.2", "10.0.1.2"),
                255,
                1099511627776L,
                new RdmaSelectionConfig(
                    List.of("mlx5_1"), 1023, true, "/etc/orbite/topology.json")),
            new NotificationConfig(1048576, 17179869184L, 4096, 0, 600000),
            new ObservabilityConfig(
                new MetricsConfig(true, "0.0.0.0", 9100),
                new DashboardConfig(true, "::1", 65535),
                60000),
            new DirectoryConfig(List.of("kv-pool", "a/b:c.d_e-f"), "all", "local", 60000, 50),
            TransportPolicies.NONE,
            new SecurityConfig(
                "auto", "/etc/orbite/secret", "/etc/orbite/full.key", "/etc/orbite/peers")),
        config);
  }

  @Test
  void defaultsSurviveTheRoundTrip() {
    EngineConfig defaults = EngineConfig.defaults();
    assertEquals(defaults, EngineConfig.fromJson(defaults.toJson()));
  }

  @Test
  void nonDefaultValuesSurviveTheRoundTrip() {
    EngineConfig config =
        new EngineConfig(
            "rt.engine_1",
            new ListenConfig("::1", 65535),
            new TcpConfig(
                64,
                268435456,
                1073741824,
                600000,
                1,
                4294967296L,
                true,
                60000,
                600000,
                86400000,
                true,
                600000,
                3600000,
                86400000L),
            new BudgetConfig(1000000, 1, 1, 1099511627776L, 1, 1, 1),
            new SlicingConfig(4096, 1, 1024),
            new TimeoutConfig(1, 3600000, 1),
            new RetryConfig(0),
            new MergeConfig(true, 1073741824L),
            new ShmConfig(true, 1, 16),
            new FileConfig("io_uring", 1, 1, 1073741824, 65536, 1),
            new RdmaConfig(
                false,
                "software",
                List.of("soft0"),
                1,
                "0.0.0.0",
                1,
                1,
                65536,
                1,
                65536,
                1,
                1,
                1,
                1,
                0,
                1,
                true,
                List.of(
                    "192.168.0.1",
                    "0.0.0.0",
                    "255.255.255.255",
                    "10.0.0.1",
                    "10.0.0.2",
                    "10.0.0.3",
                    "10.0.0.4",
                    "10.0.0.5"),
                RdmaConfig.DEFAULT_GID_INDEX,
                RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
                RdmaSelectionConfig.defaults()),
            new NotificationConfig(1, 16777216L, 1, 8388608, 1),
            new ObservabilityConfig(
                new MetricsConfig(true, "localhost", 1),
                new DashboardConfig(false, "10.1.2.3", 0),
                100),
            new DirectoryConfig(List.of(), "local", "all", 100, 60000),
            TransportPolicies.of(
                new TransportPolicy(
                    PolicyMatch.any()
                        .withOp(TransportPolicy.Op.WRITE)
                        .withMinBytes(1)
                        .withMaxBytes(Long.MAX_VALUE)
                        .withPriority(TransportPolicy.Priority.LOW)
                        .withPeer("*:7000")
                        .withMemory(TransportPolicy.Memory.REGISTERED),
                    PolicyChoice.of(
                            TransportPolicy.Transport.RDMA,
                            TransportPolicy.Transport.SHM,
                            TransportPolicy.Transport.TCP)
                        .withPriority(TransportPolicy.Priority.MEDIUM))),
            new SecurityConfig("open", "", "", ""));
    String json = config.toJson();
    assertEquals(config, EngineConfig.fromJson(json));
    assertEquals(json, EngineConfig.fromJson(json).toJson(), "serialising is deterministic");
  }

  @Test
  void toJsonWritesEveryKeyPrettyPrintedInSchemaOrder() {
    String expected =
        """
                {
                  "name": "orbite",
                  "listen": {
                    "host": "127.0.0.1",
                    "port": 0,
                    "readyAtStart": true
                  },
                  "tcp": {
                    "lanes": 2,
                    "socketBufferBytes": 262144,
                    "maxFramePayloadBytes": 16777216,
                    "connectTimeoutMillis": 5000,
                    "laneWindowFrames": 1024,
                    "laneWindowBytes": 67108864,
                    "retryReadOnOtherLane": true,
                    "reconnectInitialBackoffMillis": 20,
                    "reconnectMaxBackoffMillis": 500,
                    "reconnectGiveUpMillis": 30000,
                    "waitWhileReconnecting": true,
                    "keepaliveIntervalMillis": 500,
                    "livenessTimeoutMillis": 2000,
                    "sourceIdleTimeoutMillis": 300000
                  },
                  "budgets": {
                    "maxBatches": 256,
                    "maxBatchCapacity": 65536,
                    "maxTasksInFlight": 262144,
                    "maxInflightBytes": 8589934592,
                    "maxEndpoints": 64,
                    "maxRegistrations": 4096,
                    "maxPeerSegments": 256
                  },
                  "slicing": {
                    "baseBlockBytes": 65536,
                    "maxReadSlices": 64,
                    "maxWriteSlices": 32
                  },
                  "timeouts": {
                    "defaultDeadlineMillis": 30000,
                    "destructionWindowMillis": 30000,
                    "describeTimeoutMillis": 5000
                  },
                  "retry": {
                    "maxTransportFailovers": 1
                  },
                  "merge": {
                    "enabled": true,
                    "maxBytes": 1048576
                  },
                  "shm": {
                    "enabled": false,
                    "maxMappings": 1024,
                    "lanes": 2
                  },
                  "file": {
                    "engine": "auto",
                    "lanes": 1,
                    "queueDepth": 64,
                    "maxChunkBytes": 1048576,
                    "maxFileSegments": 64,
                    "channelThreads": 4
                  },
                  "rdma": {
                    "enabled": false,
                    "provider": "software",
                    "devices": [],
                    "lanes": 2,
                    "softwareAddress": "127.0.0.1",
                    "softwareDevices": 2,
                    "maxEndpoints": 64,
                    "maxGrants": 1024,
                    "maxSendWr": 1024,
                    "maxCqes": 32768,
                    "railErrors": 3,
                    "railErrorWindowMillis": 10000,
                    "railCooldownMillis": 30000,
                    "railMaxCooldownMillis": 300000,
                    "railProbeIntervalMillis": 1000,
                    "priorityAgingMillis": 10,
                    "priorityAgingPerEntry": false,
                    "softwareAddresses": [],
                    "gidIndex": -1,
                    "maxDirectBytes": 67108864,
                    "selection": {
                      "deviceMask": [],
                      "preferredNumaNode": -1,
                      "strictLocalNuma": false,
                      "customJsonPath": "",
                      "priorityMatrix": {}
                    },
                    "completionEvents": false
                  },
                  "notifications": {
                    "inboxCapacity": 4096,
                    "inboxBytes": 67108864,
                    "maxTagBytes": 256,
                    "maxPayloadBytes": 65536,
                    "answerTimeoutMillis": 10000
                  },
                  "observability": {
                    "metrics": {
                      "enabled": false,
                      "host": "127.0.0.1",
                      "port": 0
                    },
                    "dashboard": {
                      "enabled": false,
                      "host": "127.0.0.1",
                      "port": 0
                    },
                    "tickMillis": 1000
                  },
                  "directory": {
                    "publish": [
                      "*"
                    ],
                    "readConsistency": "majority",
                    "writeConsistency": "majority",
                    "consistencyTimeoutMillis": 5000,
                    "refreshMillis": 1000
                  },
                  "policies": [],
                  "security": {
                    "mode": "auto",
                    "secretFile": "",
                    "identityKeyFile": "",
                    "peerKeysDir": "",
                    "tlsKeyStore": "",
                    "tlsTrustStore": "",
                    "tlsPasswordFile": ""
                  }
                }""";
    assertEquals(expected, EngineConfig.defaults().toJson());
  }

  @Test
  void toJsonWritesADeviceListOneNameALine() {
    EngineConfig config =
        EngineConfig.defaults()
            .withRdma(RdmaConfig.defaults().withDevices(List.of("mlx5_0", "mlx5_1")));
    String json = config.toJson();
    assertTrue(
        json.contains(
            """
                    "devices": [
                      "mlx5_0",
                      "mlx5_1"
                    ],
                """),
        json);
    assertEquals(config, EngineConfig.fromJson(json));
  }

  @Test
  void toJsonEscapesStringsSoTheyReadBack() {
    EngineConfig config =
        EngineConfig.defaults().withListen(ListenConfig.defaults().withHost("h\"\\é"));
    String json = config.toJson();
    assertTrue(json.contains("\"h\\\"\\\\é\""), json);
    assertEquals(config, EngineConfig.fromJson(json));
  }
}

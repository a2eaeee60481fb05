package io.orbite.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.SegmentDescriptor;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class EntryCodecTest {
  static final EntryCodec.Listed PREFILL =
      new EntryCodec.Listed(
          new DirectoryEntry(
              "prefill",
              new SegmentDescriptor("127.0.0.1", 7000, 0x8000_0000_0000_0001L),
              List.of("TCP", "SHM"),
              List.of(
                  new DirectoryRegion("kv-pool", 3, 1L << 40, Access.READ),
                  new DirectoryRegion("scratch", 4, 4096, Access.READ_WRITE)),
              "pekko://orbite@127.0.0.1:2551"),
          -42);

  @Test
  void anEntryReadsBackEqual() {
    String json = EntryCodec.write(PREFILL);
    EntryCodec.Read read = EntryCodec.read("prefill", json);
    assertNull(read.refusal());
    assertEquals(PREFILL, read.listed());
    assertEquals("pekko://orbite@127.0.0.1:2551#-42", read.listed().memberKey());
  }

  @Test
  void unknownFieldsOfANewerWriterAreSkipped() {
    String json = EntryCodec.write(PREFILL).replace("{\"v\":1,", "{\"v\":2,\"future\":[1,2],");
    assertEquals(PREFILL, EntryCodec.read("prefill", json).listed());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "not json at all          | not JSON",
        "[1,2]                    | not a JSON object",
        "{}                       | field 'name' is missing or not a string",
        "{\"name\":\"other\"}     | its name 'other' differs from its key",
        "{\"name\":\"prefill\",\"host\":\"h\",\"port\":0} | port 0 is outside 1..65535",
        "{\"name\":\"prefill\",\"host\":\"h\",\"port\":1,\"epoch\":\"x\"} | field 'epoch' is missing or not a 64-bit integer",
        "{\"name\":\"prefill\",\"host\":\"h\",\"port\":1,\"epoch\":1,\"transports\":[1]} | transports holds NUMBER, not a string",
        "{\"name\":\"prefill\",\"host\":\"h\",\"port\":1,\"epoch\":1,\"transports\":[],\"regions\":[{\"name\":\"r\",\"regionId\":1,\"lengthBytes\":1,\"access\":\"ALL\"}]} | access 'ALL' is none of READ, WRITE, READ_WRITE",
        "{\"name\":\"prefill\",\"host\":\"h\",\"port\":1,\"epoch\":1,\"transports\":[],\"regions\":[{\"name\":\"r\",\"regionId\":1,\"lengthBytes\":-1,\"access\":\"READ\"}]} | region 'r' has lengthBytes -1",
        "{\"name\":\"prefill\",\"host\":\"h\",\"port\":1,\"epoch\":1,\"transports\":[],\"regions\":[]} | field 'member' is missing or not a string",
        "{\"name\":\"prefill\",\"host\":\"h\",\"port\":1,\"epoch\":1,\"transports\":[],\"regions\":[],\"member\":\"m\",\"memberUid\":1.5} | field 'memberUid' is missing or not a 64-bit integer",
      })
  void aMalformedValueIsRefusedNamingWhatIsWrong(String value, String why) {
    EntryCodec.Read read = EntryCodec.read("prefill", value);
    assertNull(read.listed());
    assertTrue(read.refusal().startsWith(why), read.refusal());
  }
}

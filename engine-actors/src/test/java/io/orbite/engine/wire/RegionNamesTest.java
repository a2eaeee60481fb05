package io.orbite.engine.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The region name rule: what it accepts, and a refusal that names what is wrong. */
class RegionNamesTest {
  @ParameterizedTest
  @ValueSource(strings = {"kv-pool", "a", "A.b_c:d/e-9", "prefill-3/kv:layer.00"})
  void namesOfTheAllowedCharactersAreAccepted(String name) {
    assertNull(RegionNames.invalidBecause(name));
    assertNull(RegionNames.invalidBecause("x".repeat(RegionNames.MAX_NAME_BYTES)));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "kv pool | region name 'kv pool' has ' ' at index 2; allowed: A-Z a-z 0-9 . _ : / -",
        "kv*     | region name 'kv*' has '*' at index 2; allowed: A-Z a-z 0-9 . _ : / -",
        "é       | region name 'é' has U+00E9 at index 0; allowed: A-Z a-z 0-9 . _ : / -",
      })
  void aNameWithAForbiddenCharacterIsRefusedNamingItAndWhere(String name, String expected) {
    assertEquals(expected, RegionNames.invalidBecause(name));
  }

  @org.junit.jupiter.api.Test
  void emptyNullTooLongAndControlCharactersAreRefusedNamingWhatIsWrong() {
    assertEquals("region name is null", RegionNames.invalidBecause(null));
    assertEquals(
        "region name is empty; a name is 1..128 characters", RegionNames.invalidBecause(""));
    assertEquals(
        "region name 'yyyyyyyyyyyyyyyy...' is 129 characters long; at most 128",
        RegionNames.invalidBecause("y".repeat(129)));
    assertEquals(
        "region name 'a\tb' has U+0009 at index 1; allowed: A-Z a-z 0-9 . _ : / -",
        RegionNames.invalidBecause("a\tb"));
  }
}

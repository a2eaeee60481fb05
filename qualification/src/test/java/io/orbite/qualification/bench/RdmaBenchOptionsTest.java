package io.orbite.qualification.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code ./orbite bench rdma}'s options: defaults, quick mode, sizes in order, errors named. */
class RdmaBenchOptionsTest {
  @Test
  void defaultsAreEverySizeForThreeSecondsOnA256MiBWorkingSet() {
    RdmaBenchOptions o = RdmaBenchOptions.parse(List.of());
    assertFalse(o.json());
    assertFalse(o.quick());
    assertEquals(3.0, o.secondsPerFigure());
    assertEquals(RdmaBench.SIZE_NAMES, o.sizes());
    assertEquals(256L << 20, o.workingSetBytes());
    assertFalse(o.engineOnly());
  }

  @Test
  void engineOnlyIsTheNullWireRateAloneAndCombinesWithTheRest() {
    RdmaBenchOptions o = RdmaBenchOptions.parse(List.of("--engine-only", "--seconds", "20"));
    assertTrue(o.engineOnly());
    assertEquals(20.0, o.secondsPerFigure());
    assertTrue(RdmaBenchOptions.USAGE.contains("[--engine-only]"), RdmaBenchOptions.USAGE);
  }

  @Test
  void quickIsOneSecondPerFigureOnA128MiBWorkingSetUnlessSecondsSaysOtherwise() {
    RdmaBenchOptions quick = RdmaBenchOptions.parse(List.of("--quick", "--json"));
    assertTrue(quick.json());
    assertEquals(1.0, quick.secondsPerFigure());
    assertEquals(128L << 20, quick.workingSetBytes());
    assertEquals(
        0.5, RdmaBenchOptions.parse(List.of("--seconds", "0.5", "--quick")).secondsPerFigure());
  }

  @Test
  void sizesKeepTheBenchOrderWhateverTheOrderGiven() {
    assertEquals(
        List.of("64KiB", "4MiB"),
        RdmaBenchOptions.parse(List.of("--sizes", "4MiB,64KiB,4MiB")).sizes());
  }

  @Test
  void badOptionsAreNamed() {
    assertEquals("unknown option --fast", message("--fast"));
    assertEquals("--sizes needs a value", message("--sizes"));
    assertEquals(
        "--sizes 1MiB,3MiB: 3MiB is not one of 64KiB, 1MiB, 4MiB, 64MiB",
        message("--sizes", "1MiB,3MiB"));
    for (String bad : List.of("0", "-1", "abc", "601", "NaN")) {
      assertEquals(
          "--seconds " + bad + ": must be 0.1..600.0 seconds", message("--seconds", bad), bad);
    }
  }

  private static String message(String... args) {
    return assertThrows(IllegalArgumentException.class, () -> RdmaBenchOptions.parse(List.of(args)))
        .getMessage();
  }
}

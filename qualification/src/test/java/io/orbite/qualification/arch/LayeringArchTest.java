package io.orbite.qualification.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The module layering, checked on the compiled product classes (tests excluded). These are the
 * rules that hold today; the ones issue 15 still has to make true (the API exposing no internal
 * type, the transports reaching the engine through the API and the SPI only) are listed in
 * docs/architecture.md, "Modules as built".
 */
class LayeringArchTest {
  /** The packages of the engine's owner actors, which only the engine itself reaches. */
  private static final String[] OWNER_ACTORS = {
    "io.orbite.engine.admission..",
    "io.orbite.engine.batch..",
    "io.orbite.engine.control..",
    "io.orbite.engine.guardian..",
    "io.orbite.engine.segment.."
  };

  private static JavaClasses product;

  private static String[] concat(String[] first, String... more) {
    return java.util.stream.Stream.concat(
            java.util.Arrays.stream(first), java.util.Arrays.stream(more))
        .toArray(String[]::new);
  }

  @BeforeAll
  static void importProduct() {
    product =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(location -> !location.contains("-tests.jar"))
            .importPackages("io.orbite");
    // The rules below are only as good as what was imported: every module's classes are there.
    for (String c :
        List.of(
            "io.orbite.config.EngineConfig",
            "io.orbite.nativebind.libc.Libc",
            "io.orbite.engine.TransferEngine",
            "io.orbite.transport.tcp.TcpEndpoint",
            "io.orbite.observability.EngineMetrics",
            "io.orbite.qualification.cli.OrbiteCli")) {
      assertTrue(product.contain(c), c + " was not imported");
    }
  }

  @Test
  void nativeBindingsKnowNoActorsAndNoEngine() {
    noClasses()
        .that()
        .resideInAPackage("io.orbite.nativebind..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("org.apache.pekko..", "io.orbite.engine..", "io.orbite.transport..")
        .because("native-bindings is the FFM layer under the transports, with no actors in it")
        .check(product);
  }

  @Test
  void nothingInTheProductDependsOnQualification() {
    noClasses()
        .that()
        .resideOutsideOfPackage("io.orbite.qualification..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.orbite.qualification..")
        .because("qualification (CLI, benches, harness) is built on the product, never under it")
        .check(product);
  }

  @Test
  void configurationDependsOnNothingOfTheEngine() {
    noClasses()
        .that()
        .resideInAPackage("io.orbite.config..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "io.orbite.engine..",
            "io.orbite.transport..",
            "io.orbite.nativebind..",
            "io.orbite.observability..",
            "org.apache.pekko..")
        .because(
            "config is the bottom layer: plain values an application builds before anything runs")
        .check(product);
  }

  @Test
  void transportsNeverReachTheEnginesOwnerActors() {
    noClasses()
        .that()
        .resideInAPackage("io.orbite.transport..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(concat(OWNER_ACTORS, "io.orbite.engine.streams.."))
        .because(
            "a transport talks to the engine through the SPI (TransportCommand, PeerChannel, receipts)")
        .check(product);
  }

  @Test
  void observabilityReadsTheEngineOnlyThroughItsApiTheSpiAndTheOwnerView() {
    noClasses()
        .that()
        .resideInAPackage("io.orbite.observability..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            concat(
                OWNER_ACTORS,
                "io.orbite.engine.registry..",
                "io.orbite.engine.slicing..",
                "io.orbite.engine.wire..",
                "io.orbite.transport.."))
        .because("metrics and the dashboard read snapshots; they never reach into an owner")
        .check(product);
  }
}

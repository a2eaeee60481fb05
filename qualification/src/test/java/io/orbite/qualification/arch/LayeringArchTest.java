package io.orbite.qualification.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.members;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import java.util.HashSet;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The module layering, checked on the compiled product classes (tests excluded), beside what the
 * compiler checks from module-info.java (and {@link ModuleBoundaryTest} from a consumer's side):
 * the API exposes no internal type; transports reach the engine only through the API and the SPI;
 * native-bindings knows no actors; nothing in the product depends on qualification; the engine's
 * modules do not depend on the optional cluster module, which reaches the engine only through its
 * API; only the guardian sends lifecycle messages to the Registry and the SegmentTable, and only
 * the Registry drives a registration's lifecycle. See docs/architecture.md, "Modules as built".
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

  /** The API packages: exported to every module. */
  private static final String[] API = {
    "io.orbite.config..", "io.orbite.engine", "io.orbite.engine.streams.."
  };

  /**
   * The SPI: what a transport (or observability) may use of the engine beside its API, exported
   * only to those modules.
   */
  private static final String[] SPI = {
    "io.orbite.engine.spi..",
    "io.orbite.engine.wire..",
    "io.orbite.engine.slicing..",
    "io.orbite.engine.rail..",
    "io.orbite.engine.priority..",
    "io.orbite.engine.view..",
    "io.orbite.engine.fault..",
    "io.orbite.engine.security.."
  };

  /** Every package of the product that is not API. */
  private static final String[] INTERNAL = {
    "io.orbite.engine.admission..",
    "io.orbite.engine.batch..",
    "io.orbite.engine.control..",
    "io.orbite.engine.guardian..",
    "io.orbite.engine.notify..",
    "io.orbite.engine.registry..",
    "io.orbite.engine.segment..",
    "io.orbite.engine.rail..",
    "io.orbite.engine.priority..",
    "io.orbite.engine.slicing..",
    "io.orbite.engine.spi..",
    "io.orbite.engine.view..",
    "io.orbite.engine.wire..",
    "io.orbite.engine.fault..",
    "io.orbite.engine.security..",
    "io.orbite.transport..",
    "io.orbite.nativebind..",
    "io.orbite.observability..",
    "io.orbite.qualification.."
  };

  private static JavaClasses product;

  private static String[] concat(String[] first, String... more) {
    return java.util.stream.Stream.concat(
            java.util.Arrays.stream(first), java.util.Arrays.stream(more))
        .toArray(String[]::new);
  }

  @BeforeAll
  static void importProduct() {
    // Every module's classes are there.
    product =
        ProductClasses.load(
            "io.orbite.config.EngineConfig",
            "io.orbite.nativebind.libc.Libc",
            "io.orbite.engine.TransferEngine",
            "io.orbite.transport.tcp.TcpLink",
            "io.orbite.observability.EngineMetrics",
            "io.orbite.cluster.PeerDirectory",
            "io.orbite.qualification.cli.OrbiteCli");
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
  void theEnginesModulesDoNotDependOnTheCluster() {
    noClasses()
        .that()
        .resideInAnyPackage(
            "io.orbite.config..",
            "io.orbite.nativebind..",
            "io.orbite.engine..",
            "io.orbite.transport..",
            "io.orbite.observability..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.orbite.cluster..")
        .because(
            "the peer directory (orbite-cluster) is optional: the engine works without it, as before"
                + " issue 40")
        .check(product);
  }

  @Test
  void theClusterReachesTheEngineOnlyThroughItsApi() {
    classes()
        .that()
        .resideInAPackage("io.orbite.cluster..")
        .should()
        .onlyDependOnClassesThat(
            JavaClass.Predicates.resideOutsideOfPackages(
                    "io.orbite.engine..",
                    "io.orbite.transport..",
                    "io.orbite.nativebind..",
                    "io.orbite.observability..")
                .or(JavaClass.Predicates.resideInAnyPackage(API)))
        .because(
            "the directory is an application of the engine: it opens, describes and checks peers"
                + " through the public API like any other")
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

  @Test
  void theApiExposesNoInternalType() {
    DescribedPredicate<JavaClass> internal = JavaClass.Predicates.resideInAnyPackage(INTERNAL);
    ArchCondition<JavaMember> exposeNoInternalType =
        new ArchCondition<>("expose no internal type in its signature") {
          @Override
          public void check(JavaMember member, ConditionEvents events) {
            Set<JavaClass> involved = new HashSet<>();
            switch (member) {
              case JavaField f -> involved.addAll(f.getType().getAllInvolvedRawTypes());
              case JavaCodeUnit c -> {
                involved.addAll(c.getReturnType().getAllInvolvedRawTypes());
                c.getParameterTypes().forEach(t -> involved.addAll(t.getAllInvolvedRawTypes()));
              }
              default -> {}
            }
            for (JavaClass t : involved) {
              if (internal.test(t)) {
                events.add(
                    SimpleConditionEvent.violated(
                        member, member.getFullName() + " exposes " + t.getName()));
              }
            }
          }
        };
    members()
        .that()
        .areDeclaredInClassesThat()
        .resideInAnyPackage("io.orbite.engine", "io.orbite.engine.streams..", "io.orbite.config..")
        .and()
        .areDeclaredInClassesThat()
        .arePublic()
        .and()
        .arePublic()
        .should(exposeNoInternalType)
        .because(
            "an application on the module path cannot name an internal type, so the API must not hand one out")
        .check(product);
  }

  @Test
  void transportsReachTheEngineOnlyThroughTheApiAndTheSpi() {
    classes()
        .that()
        .resideInAPackage("io.orbite.transport..")
        .should()
        .onlyDependOnClassesThat(
            JavaClass.Predicates.resideOutsideOfPackage("io.orbite.engine..")
                .or(JavaClass.Predicates.resideInAnyPackage(concat(API, SPI))))
        .because(
            "a transport is a plug-in: it sees the engine's API and the SPI it implements, never an owner")
        .check(product);
  }

  @Test
  void onlyTheGuardianSendsLifecycleMessagesToTheRegistryAndTheSegmentTable() {
    noClasses()
        .that()
        .resideOutsideOfPackages("io.orbite.engine.guardian..", "io.orbite.engine.registry..")
        .should()
        .callConstructor(Registry.FenceShared.class, ActorRef.class)
        .because("the guardian orchestrates the directional close (C8)")
        .check(product);
    noClasses()
        .that()
        .resideOutsideOfPackages("io.orbite.engine.guardian..", "io.orbite.engine.segment..")
        .should()
        .callConstructor(SegmentTable.Fence.class, String.class)
        .because("the guardian orchestrates the directional close (C8)")
        .check(product);
  }

  @Test
  void onlyTheRegistryDrivesARegistrationsLifecycle() {
    noClasses()
        .that()
        .resideOutsideOfPackage("io.orbite.engine.registry..")
        // The test-only fault SPI fences an SHM export under a running transfer (ShmFailoverIT);
        // no worker and no application reaches it (its package is exported to the tests only).
        .and()
        .doNotHaveFullyQualifiedName("io.orbite.engine.fault.FaultInjection")
        .should()
        .callMethod(Registration.class, "hide")
        .orShould()
        .callMethod(Registration.class, "release")
        .orShould()
        .callMethod(Registration.class, "fenceShared")
        .orShould()
        .callMethod(RegistryView.class, "publish", java.util.Map.class)
        .because("workers only take and return loans; the Registry owns the range (C1)")
        .check(product);
  }
}

package io.orbite.qualification.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The qualification verifier ({@code io.orbite.qualification.ledger}) is independent of what it
 * judges (issue 43): it depends on nothing of the engine, the transports, the native bindings, the
 * configuration, the supervisor and harness that produce the ledgers, or any other OrbiTE package;
 * only on the JDK and Jackson's JSON tree. So an engine or a supervisor that records a false result
 * cannot bring the verifier's code to agree with it.
 */
class LedgerIndependenceArchTest {
  private static JavaClasses product;

  @BeforeAll
  static void importProduct() {
    product =
        ProductClasses.load(
            "io.orbite.engine.TransferEngine",
            "io.orbite.qualification.cli.OrbiteCli",
            "io.orbite.qualification.ledger.LedgerVerifier");
  }

  @Test
  void theVerifierDependsOnlyOnTheJdkAndJackson() {
    assertTrue(
        product.stream()
                .filter(c -> c.getPackageName().equals("io.orbite.qualification.ledger"))
                .count()
            >= 3,
        "the verifier's classes were imported");
    classes()
        .that()
        .resideInAPackage("io.orbite.qualification.ledger..")
        .should()
        .onlyDependOnClassesThat()
        .resideInAnyPackage("java..", "com.fasterxml.jackson..", "io.orbite.qualification.ledger..")
        .because("the verifier judges the engine's receipts and must share no code with it")
        .check(product);
  }

  @Test
  void nothingOfTheVerifierIsUsedByTheEngineOrTheSupervisorsPeers() {
    noClasses()
        .that()
        .resideInAnyPackage(
            "io.orbite.engine..",
            "io.orbite.transport..",
            "io.orbite.qualification.harness..",
            "io.orbite.qualification.verify..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.orbite.qualification.ledger..")
        .because("the verifier is a judge only: nothing that produces receipts calls it")
        .check(product);
  }
}

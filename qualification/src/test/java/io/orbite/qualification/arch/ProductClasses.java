package io.orbite.qualification.arch;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;

/** The compiled product classes the architecture tests check: every module's, no test's. */
final class ProductClasses {
  private ProductClasses() {}

  /**
   * Imports the product's classes and checks that {@code expected} are among them: a rule is only
   * as good as what was imported.
   *
   * @param expected classes (by name) the caller's rules are about
   * @return the classes
   */
  static JavaClasses load(String... expected) {
    JavaClasses product =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(location -> !location.contains("-tests.jar"))
            .importPackages("io.orbite");
    for (String c : expected) {
      assertTrue(product.contain(c), c + " was not imported");
    }
    return product;
  }
}

package io.orbite.qualification.arch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.orbite.engine.OwnerState;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.Lifecycle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md's state tables name exactly the states of the code's lifecycle types, so a
 * table cannot drift from the code: every forward-only state type of the product (each enum that
 * implements {@link Lifecycle.Stage}, found on the compiled classes), the {@link ChannelGate}'s
 * states, and the owner view's {@link OwnerState}s.
 */
class LifecycleDocsTest {
  private static final Path ARCHITECTURE = Path.of("..", "docs", "architecture.md");
  private static final Pattern CODE = Pattern.compile("`([^`]+)`");

  /** The rows of the table under {@code heading}: the cells of each, code spans unwrapped. */
  private static List<List<String>> table(List<String> lines, String heading) {
    int at = lines.indexOf(heading);
    assertTrue(at >= 0, "docs/architecture.md has no heading " + heading);
    List<List<String>> rows = new ArrayList<>();
    boolean inTable = false;
    for (int i = at + 1; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.startsWith("#")) {
        break;
      }
      if (!line.startsWith("|")) {
        if (inTable) {
          break;
        }
        continue;
      }
      inTable = true;
      List<String> cells =
          Arrays.stream(line.substring(1, line.length() - 1).split("\\|"))
              .map(String::trim)
              .toList();
      if (cells.get(0).startsWith("---") || rows.isEmpty() && !cells.get(0).startsWith("`")) {
        continue; // the header and its rule
      }
      rows.add(cells);
    }
    assertFalse(rows.isEmpty(), "no table under " + heading);
    return rows;
  }

  private static List<String> codeSpans(String cell) {
    List<String> out = new ArrayList<>();
    Matcher m = CODE.matcher(cell);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  /** Every state type of the product: its name as the docs write it, and its states in order. */
  private static Map<String, List<String>> stateTypes() throws Exception {
    Map<String, List<String>> out = new TreeMap<>();
    for (JavaClass c :
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(location -> !location.contains("-tests.jar"))
            .importPackages("io.orbite")) {
      if (c.isEnum() && c.isAssignableTo(Lifecycle.Stage.class)) {
        Class<?> type = Class.forName(c.getName());
        String name =
            type.getEnclosingClass() == null
                ? type.getSimpleName()
                : type.getEnclosingClass().getSimpleName() + "." + type.getSimpleName();
        out.put(
            name, Arrays.stream(type.getEnumConstants()).map(e -> ((Enum<?>) e).name()).toList());
      }
    }
    out.put(
        "ChannelGate",
        Arrays.stream(ChannelGate.State.class.getPermittedSubclasses())
            .map(s -> s.getSimpleName().toUpperCase(Locale.ROOT))
            .toList());
    return out;
  }

  @Test
  void theLifecycleTableNamesExactlyEachTypesStates() throws Exception {
    List<String> lines = Files.readAllLines(ARCHITECTURE);
    Map<String, List<String>> documented = new TreeMap<>();
    for (List<String> row : table(lines, "### Lifecycle types")) {
      List<String> type = codeSpans(row.get(0));
      assertEquals(1, type.size(), "one type per row: " + row);
      // A state is written NAME, or NAME(data) for one that carries data.
      documented.put(
          type.getFirst(),
          codeSpans(row.get(1)).stream().map(s -> s.replaceAll("\\(.*\\)$", "")).toList());
    }
    Map<String, List<String>> code = stateTypes();
    assertTrue(code.size() >= 5, code::toString);
    assertEquals(code.keySet(), documented.keySet(), "the table lists every state type, no more");
    code.forEach(
        (type, states) -> assertEquals(states, documented.get(type), type + "'s states, in order"));
  }

  @Test
  void theOwnerStateTableNamesExactlyTheOwnerStates() throws Exception {
    List<String> lines = Files.readAllLines(ARCHITECTURE);
    List<String> documented =
        table(lines, "### Owner states").stream().map(r -> codeSpans(r.get(0)).getFirst()).toList();
    assertEquals(
        Arrays.stream(OwnerState.values()).map(OwnerState::label).toList(),
        documented,
        "every owner state, in the enum's order");
  }
}

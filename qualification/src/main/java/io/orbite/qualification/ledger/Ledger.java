package io.orbite.qualification.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One JSONL file of a qualification run, read line by line: the supervisor's ledger or one
 * process's receipts. A line that is not a JSON object is kept as a failure naming the file and the
 * line, never skipped in silence.
 *
 * @param name the file's name, for the verdict's messages
 * @param lines the JSON objects, in file order
 * @param failures the lines that could not be read, each named
 */
record Ledger(String name, List<JsonNode> lines, List<String> failures) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Reads {@code file}; a missing file reads as null. */
  static Ledger read(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      return null;
    }
    List<JsonNode> lines = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    int number = 0;
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      number++;
      if (line.isBlank()) {
        continue;
      }
      try {
        JsonNode node = JSON.readTree(line);
        if (node == null || !node.isObject() || !node.path("type").isTextual()) {
          failures.add(file.getFileName() + " line " + number + ": not a JSON object with a type");
        } else {
          lines.add(node);
        }
      } catch (IOException e) {
        failures.add(
            file.getFileName() + " line " + number + ": not JSON (" + e.getMessage() + ")");
      }
    }
    return new Ledger(file.getFileName().toString(), List.copyOf(lines), List.copyOf(failures));
  }

  /** The lines whose {@code type} is {@code type}, in order. */
  List<JsonNode> ofType(String type) {
    return lines.stream().filter(n -> n.path("type").asText().equals(type)).toList();
  }
}

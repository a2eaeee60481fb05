package io.orbite.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DashboardPanelsTest {

  @Test
  void aPanelIsReadAtEverySnapshotUntilItsHandleCloses() throws Exception {
    DashboardPanels panels = new DashboardPanels();
    List<List<String>> rows = new ArrayList<>();
    rows.add(List.of("prefill", "127.0.0.1:7000"));
    AutoCloseable handle = panels.add("directory", List.of("name", "endpoint"), () -> rows);
    assertEquals(
        List.of(
            new DashboardPanels.Panel(
                "directory",
                List.of("name", "endpoint"),
                List.of(List.of("prefill", "127.0.0.1:7000")),
                "")),
        panels.snapshot());
    rows.add(List.of("decode", "127.0.0.1:7001"));
    assertEquals(2, panels.snapshot().get(0).rows().size());
    handle.close();
    handle.close();
    assertEquals(List.of(), panels.snapshot());
  }

  @Test
  void aTitleIsShownOnceAndMustBeGiven() throws Exception {
    DashboardPanels panels = new DashboardPanels();
    AutoCloseable first = panels.add("directory", List.of("name"), List::of);
    TransferException twice =
        assertThrows(
            TransferException.class, () -> panels.add("directory", List.of("name"), List::of));
    assertEquals(ErrorKind.INVALID_ARGUMENT, twice.kind());
    assertTrue(twice.getMessage().contains("'directory' is already shown"), twice.getMessage());
    first.close();
    panels.add("directory", List.of("name"), List::of).close();
    for (String bad : new String[] {null, "", " ", "x".repeat(65)}) {
      TransferException e =
          assertThrows(TransferException.class, () -> panels.add(bad, List.of("a"), List::of));
      assertTrue(e.getMessage().contains("the title must be 1..64 characters"), e.getMessage());
    }
    assertThrows(TransferException.class, () -> panels.add("t", List.of(), List::of));
    assertThrows(TransferException.class, () -> panels.add("t", List.of("a"), null));
  }

  @Test
  void aSupplierThatThrowsOrAnswersBadRowsShowsWhyAndNoRows() {
    DashboardPanels panels = new DashboardPanels();
    panels.add(
        "throws",
        List.of("a"),
        () -> {
          throw new IllegalStateException("directory closed");
        });
    panels.add("narrow", List.of("a", "b"), () -> List.of(List.of("only one")));
    List<DashboardPanels.Panel> shown = panels.snapshot();
    assertEquals(List.of(), shown.get(0).rows());
    assertTrue(shown.get(0).detail().contains("directory closed"), shown.get(0).detail());
    assertEquals(List.of(), shown.get(1).rows());
    assertTrue(
        shown.get(1).detail().contains("row 0 is [only one], the panel has 2 columns"),
        shown.get(1).detail());
  }
}

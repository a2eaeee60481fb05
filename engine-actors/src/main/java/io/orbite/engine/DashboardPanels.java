package io.orbite.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * Tables that modules outside the engine add to its dashboard ({@link Engine#dashboardPanels()}):
 * the peer directory of {@code orbite-cluster} shows what is published there. The engine does not
 * know those modules; a module registers a title, its columns and a supplier of rows, and the
 * dashboard (module {@code orbite-observability}) draws each panel under its title, read at every
 * snapshot. Thread-safe.
 */
public final class DashboardPanels {
  /** Longest panel title, in characters. */
  public static final int MAX_TITLE_LENGTH = 64;

  private final List<Registered> panels = new CopyOnWriteArrayList<>();

  /** An empty set of panels (one per engine). */
  public DashboardPanels() {}

  /**
   * One panel as the dashboard draws it now.
   *
   * @param title its heading, unique among the engine's panels
   * @param columns the column headings
   * @param rows its rows, each with one cell per column
   * @param detail empty; otherwise why the rows could not be read (the supplier threw, or a row had
   *     the wrong number of cells), and {@code rows} is empty
   */
  public record Panel(String title, List<String> columns, List<List<String>> rows, String detail) {
    /** Copies the lists. */
    public Panel {
      columns = List.copyOf(columns);
      rows = rows.stream().map(List::copyOf).toList();
    }
  }

  /**
   * Adds a panel until the returned handle is closed.
   *
   * @param title its heading: 1..{@value #MAX_TITLE_LENGTH} characters, unique among this engine's
   *     panels
   * @param columns the column headings, at least one
   * @param rows called at every snapshot, on the dashboard's thread: must answer at once (read a
   *     published snapshot, never a mailbox); each row has one cell per column
   * @return closes the panel (idempotent)
   * @throws TransferException INVALID_ARGUMENT for a null, empty or too long title, a title already
   *     shown, no columns or a null supplier
   */
  public AutoCloseable add(String title, List<String> columns, Supplier<List<List<String>>> rows) {
    if (title == null || title.isBlank() || title.length() > MAX_TITLE_LENGTH) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "dashboard panel: the title must be 1.."
              + MAX_TITLE_LENGTH
              + " characters, got "
              + (title == null ? "null" : "'" + title + "'"));
    }
    if (columns == null || columns.isEmpty() || rows == null) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "dashboard panel '" + title + "': needs at least one column and a supplier of rows");
    }
    Registered panel = new Registered(title, List.copyOf(columns), rows);
    synchronized (panels) {
      if (panels.stream().anyMatch(p -> p.title.equals(title))) {
        throw new TransferException(
            ErrorKind.INVALID_ARGUMENT, "dashboard panel '" + title + "' is already shown");
      }
      panels.add(panel);
    }
    return () -> panels.remove(panel);
  }

  /**
   * Every panel with its rows read now, in the order they were added.
   *
   * @return the panels; empty when no module added one
   */
  public List<Panel> snapshot() {
    List<Panel> out = new ArrayList<>(panels.size());
    for (Registered p : panels) {
      out.add(p.read());
    }
    return out;
  }

  private record Registered(String title, List<String> columns, Supplier<List<List<String>>> rows) {
    Panel read() {
      List<List<String>> read;
      try {
        read = Objects.requireNonNull(rows.get(), "the supplier answered null");
      } catch (RuntimeException e) {
        return new Panel(title, columns, List.of(), "rows unavailable: " + e);
      }
      for (int i = 0; i < read.size(); i++) {
        List<String> row = read.get(i);
        if (row == null || row.size() != columns.size() || row.stream().anyMatch(Objects::isNull)) {
          return new Panel(
              title,
              columns,
              List.of(),
              "rows unavailable: row "
                  + i
                  + " is "
                  + row
                  + ", the panel has "
                  + columns.size()
                  + " columns and takes no null cell");
        }
      }
      return new Panel(title, columns, read, "");
    }
  }
}

package io.orbite.qualification.verify;

import java.io.BufferedReader;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A range {@code [offset, offset + length)} of a region that should hold pattern {@code seed}
 * starting at pattern position {@code from}; everything outside the listed spans is guard bytes.
 */
public record Span(long offset, long length, long seed, long from) {
  /**
   * Reads {@code n} spans, one a line ({@code offset length seed from}), as the child processes'
   * VERIFY commands take them.
   */
  public static List<Span> read(BufferedReader in, int n) throws IOException {
    List<Span> spans = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String line = in.readLine();
      if (line == null) {
        throw new IOException("the input ended after " + i + " of " + n + " spans");
      }
      String[] s = line.trim().split("\\s+");
      spans.add(
          new Span(
              Long.parseLong(s[0]),
              Long.parseLong(s[1]),
              Long.parseLong(s[2]),
              Long.parseLong(s[3])));
    }
    return spans;
  }
}

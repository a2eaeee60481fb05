package io.orbite.qualification.observability;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;

/** HTTP helpers for the observability tests: GETs, raw requests, and reading Prometheus text. */
final class Http {
  private static final HttpClient CLIENT =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private Http() {}

  static HttpResponse<String> get(String url) {
    try {
      return CLIENT.send(
          HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new AssertionError("GET " + url + " failed: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /**
   * Sends {@code raw} bytes as they are and returns the status code of the answer (-1: no status
   * line).
   */
  static int raw(String url, byte[] raw) {
    URI u = URI.create(url);
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(u.getHost(), u.getPort()), 5000);
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      try {
        out.write(raw);
        out.flush();
      } catch (IOException e) {
        // The server may answer and close before reading everything (oversized requests).
      }
      InputStream in = s.getInputStream();
      ByteArrayOutputStream got = new ByteArrayOutputStream();
      byte[] buf = new byte[4096];
      int n;
      while (got.size() < 64 && (n = in.read(buf)) > 0) {
        got.write(buf, 0, n);
      }
      String head = got.toString(StandardCharsets.ISO_8859_1);
      Matcher m = java.util.regex.Pattern.compile("^HTTP/1\\.[01] (\\d{3})").matcher(head);
      return m.find() ? Integer.parseInt(m.group(1)) : -1;
    } catch (IOException e) {
      throw new AssertionError("raw request to " + url + " failed: " + e, e);
    }
  }

  /**
   * The sum of every sample of {@code metric} whose labels include all of {@code labels}, in the
   * Prometheus text {@code scrape}; 0 when there is none.
   */
  static double sample(String scrape, String metric, Map<String, String> labels) {
    double sum = 0;
    for (String line : scrape.split("\n")) {
      if (line.startsWith("#") || !line.startsWith(metric)) {
        continue;
      }
      int brace = line.indexOf('{');
      int space = line.lastIndexOf(' ');
      String name = brace < 0 ? line.substring(0, space) : line.substring(0, brace);
      if (!name.equals(metric)) {
        continue;
      }
      Map<String, String> have = new HashMap<>();
      if (brace >= 0) {
        String body = line.substring(brace + 1, line.lastIndexOf('}'));
        Matcher m =
            java.util.regex.Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"")
                .matcher(body);
        while (m.find()) {
          have.put(m.group(1), m.group(2));
        }
      }
      if (have.entrySet().containsAll(labels.entrySet())) {
        sum += Double.parseDouble(line.substring(space + 1));
      }
    }
    return sum;
  }
}

package io.orbite.observability;

import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.ParsingErrorHandler;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCode;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;

/**
 * Answers a request that does not parse with its 4xx status and a one-line reason. Pekko answers an
 * unknown method (501) or protocol version (505) with a server error; here they are the client's
 * error and are answered 400, so every malformed request gets a 4xx.
 */
public final class ClientErrorParsingHandler extends ParsingErrorHandler {
  @Override
  public HttpResponse handle(
      StatusCode status, ErrorInfo error, LoggingAdapter log, ServerSettings settings) {
    int code = status.intValue();
    var answer = code >= 400 && code < 500 ? StatusCodes.get(code) : StatusCodes.BAD_REQUEST;
    log.debug("refused a malformed request ({}): {}", code, error.summary());
    return HttpResponse.create()
        .withStatus(answer)
        .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, error.summary() + "\n"));
  }
}

package io.orbite.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a {@link TransportPolicy} chooses for the requests it matches. Checked when it becomes part
 * of a {@link TransportPolicies}, see {@link TransportPolicy}.
 *
 * <p>Lane masks (which TCP lanes may carry a task) and rail masks (which RDMA rails) are not
 * supported yet: the JSON keys {@code laneMask} and {@code railMask} are refused by name, rather
 * than read and ignored.
 *
 * @param transports the transports tried in order: the first whose channel to the peer can carry
 *     the request's region now wins; if none can, the request is refused at submit naming the rule
 *     and why each was unavailable. 1..3 transports ({@link #MAX_TRANSPORTS}), none repeated
 * @param priority the priority given to a request that kept the default one ({@code HIGH}, as
 *     {@code TransferRequest.read}/{@code write} give), or {@code null} to leave every request's
 *     own. A request that set {@code MEDIUM} or {@code LOW} keeps it.
 */
public record PolicyChoice(
    List<TransportPolicy.Transport> transports, TransportPolicy.Priority priority) {

  /** Most transports one rule may name: each of TCP, SHM and RDMA once. */
  public static final int MAX_TRANSPORTS = TransportPolicy.Transport.values().length;

  /**
   * Copies {@code transports} (a {@code null} list or element is kept, for the check to name).
   *
   * @param transports the transports tried in order
   * @param priority the priority given, or {@code null}
   */
  public PolicyChoice {
    transports =
        transports == null ? null : Collections.unmodifiableList(new ArrayList<>(transports));
  }

  /**
   * A choice of {@code first}, then each of {@code then} in order, that gives no priority.
   *
   * @param first the transport tried first
   * @param then the transports tried after it, in order
   * @return the choice
   */
  public static PolicyChoice of(
      TransportPolicy.Transport first, TransportPolicy.Transport... then) {
    List<TransportPolicy.Transport> all = new ArrayList<>(1 + then.length);
    all.add(first);
    Collections.addAll(all, then);
    return new PolicyChoice(all, null);
  }

  /**
   * A copy with {@link #priority()} replaced.
   *
   * @param value the priority given to requests that kept the default one, or {@code null}
   * @return a new choice; this one is unchanged
   */
  public PolicyChoice withPriority(TransportPolicy.Priority value) {
    return new PolicyChoice(transports, value);
  }

  /**
   * Checks the choice of rule {@code path} ({@code policies[2]}); messages name {@code
   * <path>.choose.<key>}.
   */
  void check(String path) {
    String at = Checks.child(Checks.child(path, "choose"), "transports");
    Checks.requireNonNull(at, transports);
    if (transports.isEmpty()) {
      throw new ConfigException(at, "must name at least one transport (TCP, SHM, RDMA)");
    }
    if (transports.size() > MAX_TRANSPORTS) {
      throw new ConfigException(
          at, "must name at most " + MAX_TRANSPORTS + " transports, got " + transports.size());
    }
    for (int i = 0; i < transports.size(); i++) {
      String element = at + "[" + i + "]";
      Checks.requireNonNull(element, transports.get(i));
      int first = transports.indexOf(transports.get(i));
      if (first < i) {
        throw new ConfigException(
            element,
            "must differ from every other transport, got \""
                + transports.get(i)
                + "\" again (first at "
                + at
                + "["
                + first
                + "])");
      }
    }
  }
}

package io.orbite.engine;

/** Which transport carries a request; {@link #UNSPEC} lets the engine choose. */
public enum Transport {
  UNSPEC,
  TCP,
  SHM,
  FILE,
  RDMA
}

package io.orbite.engine;

/** One range a peer published in its Describe answer. */
public record RemoteRegion(long regionId, long lengthBytes, Access access) {}

package io.orbite.engine;

/**
 * One range a peer published in its Describe answer.
 *
 * @param regionId the id requests name the range by ({@link TransferRequest#regionId()})
 * @param lengthBytes the range's size in bytes when it was described
 * @param access what the peer granted on it then; the peer checks again on every request (C2)
 */
public record RemoteRegion(long regionId, long lengthBytes, Access access) {}

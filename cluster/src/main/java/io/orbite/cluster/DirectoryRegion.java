package io.orbite.cluster;

import io.orbite.engine.Access;

/**
 * One named region as an engine published it in the directory: a hint of what to name in requests.
 * The source still checks every request against its live registration (C2): a listed region grants
 * nothing, and one unregistered since it was published is refused by the source.
 *
 * @param name the region's name, unique in its engine
 * @param regionId the id requests name it by
 * @param lengthBytes its size when published
 * @param access what the source granted on it when published
 */
public record DirectoryRegion(String name, long regionId, long lengthBytes, Access access) {}

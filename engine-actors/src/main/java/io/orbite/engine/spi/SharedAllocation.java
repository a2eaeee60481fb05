package io.orbite.engine.spi;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Engine-owned memory in a memfd: the mapped segment (zeroed, page aligned), the arena whose close
 * unmaps it and closes the memfd, and the backing Describe publishes.
 */
public record SharedAllocation(MemorySegment segment, Arena arena, SharedBacking backing) {}

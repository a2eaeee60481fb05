/**
 * Rail health for the RDMA transport (C13): the circuit of each (peer epoch, local rail, remote
 * rail) pair. Pure logic with an injected clock; not API (exported only to the transports).
 */
package io.orbite.engine.rail;

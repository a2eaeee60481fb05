/**
 * The software RDMA provider: {@link io.orbite.nativebind.verbs.soft.SoftVerbs}, the {@link
 * io.orbite.nativebind.verbs.Verbs} table with RC semantics over TCP, configured by a {@link
 * io.orbite.nativebind.verbs.soft.SoftFabric}, with a fault table ({@link
 * io.orbite.nativebind.verbs.soft.SoftFaults}) for tests.
 */
package io.orbite.nativebind.verbs.soft;

/**
 * The RDMA transport over the verbs table: rails (device contexts), CQ lanes, endpoints and grants;
 * the software provider runs it everywhere, libibverbs on hardware.
 */
package io.orbite.transport.rdma;

/**
 * Priority for the transports' workers (C14): the three-tier post queue with aging. Pure logic; not
 * API (exported only to the transports).
 */
package io.orbite.engine.priority;

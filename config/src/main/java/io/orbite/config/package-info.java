/**
 * Engine configuration: immutable, validated records with documented defaults, loaded strictly from
 * JSON.
 *
 * <p>{@link io.orbite.config.EngineConfig} is the root; its sections are {@link
 * io.orbite.config.ListenConfig}, {@link io.orbite.config.TcpConfig}, {@link
 * io.orbite.config.BudgetConfig}, {@link io.orbite.config.SlicingConfig}, {@link
 * io.orbite.config.TimeoutConfig}, {@link io.orbite.config.ShmConfig}, {@link
 * io.orbite.config.FileConfig}, {@link io.orbite.config.RdmaConfig} and {@link
 * io.orbite.config.ObservabilityConfig} (with {@link io.orbite.config.MetricsConfig} and {@link
 * io.orbite.config.DashboardConfig}); its one list is {@link io.orbite.config.TransportPolicies},
 * first-match rules ({@link io.orbite.config.TransportPolicy}) for the transport selector. Every
 * default and bound is a public constant named {@code DEFAULT_<KEY>}, {@code MIN_<KEY>} and {@code
 * MAX_<KEY>}. Every rejection is a {@link io.orbite.config.ConfigException} whose message starts
 * with the path of the problem. See {@code docs/configuration.md} for the full key table.
 */
package io.orbite.config;

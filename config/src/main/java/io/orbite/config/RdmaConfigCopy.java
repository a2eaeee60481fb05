package io.orbite.config;

import java.util.List;

/**
 * A mutable copy of an {@link RdmaConfig}'s components, for its {@code with...} methods: each sets
 * the components it replaces and {@link #build()}s a new record, checked by the canonical
 * constructor. With 22 components, spelling the whole constructor call in every copy method hid
 * which component each one changes.
 */
final class RdmaConfigCopy {
  boolean enabled;
  String provider;
  List<String> devices;
  int lanes;
  String softwareAddress;
  int softwareDevices;
  int maxEndpoints;
  int maxGrants;
  int maxSendWr;
  int maxCqes;
  int railErrors;
  int railErrorWindowMillis;
  int railCooldownMillis;
  int railMaxCooldownMillis;
  int railProbeIntervalMillis;
  int priorityAgingMillis;
  boolean priorityAgingPerEntry;
  List<String> softwareAddresses;
  int gidIndex;
  long maxDirectBytes;
  RdmaSelectionConfig selection;
  boolean completionEvents;

  RdmaConfigCopy(RdmaConfig c) {
    enabled = c.enabled();
    provider = c.provider();
    devices = c.devices();
    lanes = c.lanes();
    softwareAddress = c.softwareAddress();
    softwareDevices = c.softwareDevices();
    maxEndpoints = c.maxEndpoints();
    maxGrants = c.maxGrants();
    maxSendWr = c.maxSendWr();
    maxCqes = c.maxCqes();
    railErrors = c.railErrors();
    railErrorWindowMillis = c.railErrorWindowMillis();
    railCooldownMillis = c.railCooldownMillis();
    railMaxCooldownMillis = c.railMaxCooldownMillis();
    railProbeIntervalMillis = c.railProbeIntervalMillis();
    priorityAgingMillis = c.priorityAgingMillis();
    priorityAgingPerEntry = c.priorityAgingPerEntry();
    softwareAddresses = c.softwareAddresses();
    gidIndex = c.gidIndex();
    maxDirectBytes = c.maxDirectBytes();
    selection = c.selection();
    completionEvents = c.completionEvents();
  }

  /** A new record of the components as they are now; checked as by the canonical constructor. */
  RdmaConfig build() {
    return new RdmaConfig(
        enabled,
        provider,
        devices,
        lanes,
        softwareAddress,
        softwareDevices,
        maxEndpoints,
        maxGrants,
        maxSendWr,
        maxCqes,
        railErrors,
        railErrorWindowMillis,
        railCooldownMillis,
        railMaxCooldownMillis,
        railProbeIntervalMillis,
        priorityAgingMillis,
        priorityAgingPerEntry,
        softwareAddresses,
        gidIndex,
        maxDirectBytes,
        selection,
        completionEvents);
  }
}

import type { Manifest, ManifestOf } from "../manifests/manifest.js";
import { mapLimited } from "../map-limited.js";
import type { PlatformClient } from "../platform/client.js";
import { resourceId } from "../resources.js";
import { defaultOf, SETTINGS } from "../settings.js";
import type { Records } from "../state/saved-records.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { pollAlert } from "./alert-poll.js";
import { readAlertStates } from "./alert-states.js";
import { type BackupPoll, pollBackups } from "./backup-poll.js";
import type { LiveState, WatchStatus } from "./status-board.js";

export type PollerDeps = {
  platform: PlatformClient;
  /**
   * Tile key → server tile id of a Dashboard (by manifest name), as the reconciler last loaded or saved
   * them: a poll round never loads the state.
   */
  tileIdsOf: (dashboardName: string) => Promise<Record<string, string> | undefined>;
  /** The records as last loaded or saved: the ids of the Alerts driftless created. */
  records?: () => Promise<Records>;
  metrics: Metrics;
  logger: Logger;
  now?: () => number;
  /** Polls in flight at once; the rate budget still decides when each is sent. Default 4. */
  concurrency?: number;
  /**
   * The alert states in which `driftless_alert_firing` is 1, compared without regard to case; default
   * the one of DRIFTLESS_ALERT_FIRING_STATES.
   */
  firingStates?: readonly string[];
};

/**
 * Polls every AlertWatch and BackupWatch and keeps their metric series equal to what was found: one
 * `driftless_alert_state` series per alert (its current state; the old state's series is removed) and
 * its `driftless_alert_firing`, the backup gauges per service, and no series at all for a watch that
 * left the manifests.
 */
export class Poller {
  /** Alert series by watch name: the labels set last time, to remove them when they change. */
  private alertSeries = new Map<string, { alert: string; name: string; state: string }>();
  /** Backup series keys (`organization/service`) set last time. */
  private backupSeries = new Map<string, { organization: string; service: string }>();

  /** The firing states, lower-cased. */
  private readonly firing: ReadonlySet<string>;

  constructor(private readonly deps: PollerDeps) {
    const states = deps.firingStates ?? (defaultOf(SETTINGS.alertFiringStates) as string[]);
    this.firing = new Set(states.map((state) => state.toLowerCase()));
  }

  /** One round over the watches of `manifests`; returns their statuses. Never throws for a failed call. */
  async poll(manifests: readonly Manifest[], signal?: AbortSignal): Promise<WatchStatus[]> {
    const alerts = manifests.filter((m): m is ManifestOf<"AlertWatch"> => m.kind === "AlertWatch");
    const backups = manifests.filter((m): m is ManifestOf<"BackupWatch"> => m.kind === "BackupWatch");
    const dashboards = new Map(
      manifests.filter((m): m is ManifestOf<"Dashboard"> => m.kind === "Dashboard").map((d) => [d.name, d]),
    );
    const options = signal ? { signal } : {};
    const alertDeps = { ...this.deps, dashboards, ...options };
    const backupDeps = { ...this.deps, ...options };

    const seenAlerts = new Set<string>();
    const seenBackups = new Set<string>();
    const statuses = await mapLimited([...alerts, ...backups], this.deps.concurrency ?? 4, async (watch) => {
      if (watch.kind === "AlertWatch") {
        seenAlerts.add(watch.name);
        const { status, state, gone } = await pollAlert(watch, alertDeps);
        if (state !== undefined) this.setAlertState(watch.spec.alertId, watch.name, state);
        else if (gone) this.removeAlert(watch.name);
        return this.counted(status);
      }
      const key = `${watch.spec.organizationId}/${watch.spec.serviceId}`;
      seenBackups.add(key);
      const found = await pollBackups(watch, backupDeps);
      const labels = { organization: watch.spec.organizationId, service: watch.spec.serviceId };
      if (found.stale !== undefined) this.setBackup(key, labels, found);
      return this.counted(found.status);
    });

    // A watch deleted from git takes its series with it.
    for (const name of [...this.alertSeries.keys()]) if (!seenAlerts.has(name)) this.removeAlert(name);
    for (const [key, labels] of [...this.backupSeries]) {
      if (seenBackups.has(key)) continue;
      this.removeBackup(labels);
      this.backupSeries.delete(key);
    }
    return statuses;
  }

  /**
   * The live state of each managed Alert of `manifests` (alert-states.ts), for the status beside its
   * manifest's. Never throws: a failed read is that alert's state.
   */
  alertStates(manifests: readonly Manifest[], signal?: AbortSignal): Promise<Map<string, LiveState>> {
    const alerts = manifests.filter((m): m is ManifestOf<"Alert"> => m.kind === "Alert");
    const { platform, records, now } = this.deps;
    return readAlertStates(alerts, {
      platform,
      ...(records ? { records } : {}),
      ...(signal ? { signal } : {}),
      ...(now ? { now } : {}),
    });
  }

  /** Removes every series this poller set (a replica that stops leading must not export stale ones). */
  clear(): void {
    for (const name of [...this.alertSeries.keys()]) this.removeAlert(name);
    for (const labels of this.backupSeries.values()) this.removeBackup(labels);
    this.backupSeries.clear();
  }

  /** The backup gauges of one service: stale and failed always, the newest backup's figures when there is one. */
  private setBackup(key: string, labels: Labels, { stale, failed, newest }: BackupPoll): void {
    const { metrics } = this.deps;
    this.backupSeries.set(key, labels);
    metrics.backupStale.set(labels, stale ? 1 : 0);
    metrics.backupFailed.set(labels, failed ? 1 : 0);
    setOrRemove(metrics.backupLastFinished, labels, newest && newest.finishedAt / 1000);
    setOrRemove(metrics.backupSizeBytes, labels, newest?.sizeInBytes);
    setOrRemove(metrics.backupDurationSeconds, labels, newest?.durationInSeconds);
  }

  private removeBackup(labels: Labels): void {
    const { metrics } = this.deps;
    for (const gauge of [
      metrics.backupStale,
      metrics.backupFailed,
      metrics.backupLastFinished,
      metrics.backupSizeBytes,
      metrics.backupDurationSeconds,
    ])
      gauge.remove(labels);
  }

  private counted(status: WatchStatus): WatchStatus {
    this.deps.metrics.pollTotal.inc({ result: status.status === "Failed" ? "error" : "success" });
    if (status.status === "Failed") {
      this.deps.logger.warn(
        { resource: resourceId(status), requestId: status.requestId, reason: status.message },
        "poll failed",
      );
    }
    return status;
  }

  private setAlertState(alert: string, name: string, state: string): void {
    const previous = this.alertSeries.get(name);
    if (previous && (previous.state !== state || previous.alert !== alert)) {
      this.deps.metrics.alertState.remove(previous);
    }
    if (previous && previous.alert !== alert) this.deps.metrics.alertFiring.remove(seriesOf(previous));
    const labels = { alert, name, state };
    this.alertSeries.set(name, labels);
    this.deps.metrics.alertState.set(labels, 1);
    this.deps.metrics.alertFiring.set({ alert, name }, this.firing.has(state.toLowerCase()) ? 1 : 0);
  }

  private removeAlert(name: string): void {
    const previous = this.alertSeries.get(name);
    if (previous) {
      this.deps.metrics.alertState.remove(previous);
      this.deps.metrics.alertFiring.remove(seriesOf(previous));
    }
    this.alertSeries.delete(name);
  }
}

type Labels = { organization: string; service: string };

/** The labels of an alert's firing series (its state series without the state). */
const seriesOf = ({ alert, name }: { alert: string; name: string }) => ({ alert, name });

function setOrRemove(
  gauge: { set(labels: Labels, value: number): void; remove(labels: Labels): void },
  labels: Labels,
  value: number | undefined,
) {
  if (value === undefined) gauge.remove(labels);
  else gauge.set(labels, value);
}

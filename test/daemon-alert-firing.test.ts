import { describe, expect, it } from "vitest";
import { apiKey, ids, metricsOf, useDaemonRun } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * `driftless_alert_firing{alert,name}` from a real `driftless run` process polling the simulator: 1 only
 * while the alert's state is one of DRIFTLESS_ALERT_FIRING_STATES (default ALERT, any case), beside
 * `driftless_alert_state`, which keeps the state as the platform spells it. Needs dist/ built.
 */

const run = useDaemonRun();

const firing = (value: 0 | 1) => `driftless_alert_firing{alert="${ids.alertId}",name="ingest-lag"} ${value}`;

/** The metrics text once the alert's state series shows `state`. */
const metricsWithState = (d: Parameters<typeof metricsOf>[0], state: string) =>
  until(async () => {
    const text = await metricsOf(d);
    return text.includes(`state="${state}"} 1`) ? text : undefined;
  });

describe("driftless_alert_firing", () => {
  it("is 0 for OK, 1 for ALERT and 0 for active and an unknown state by default", async () => {
    const d = await run.start();

    const ok = await metricsWithState(d, "OK");
    run.simulator.setAlertState(ids.alertId, "ALERT");
    const alert = await metricsWithState(d, "ALERT");
    run.simulator.setAlertState(ids.alertId, "active");
    const active = await metricsWithState(d, "active");
    run.simulator.setAlertState(ids.alertId, "snoozed_until_monday");
    const unknown = await metricsWithState(d, "snoozed_until_monday");

    expect(ok).toContain(firing(0));
    expect(alert).toContain(firing(1));
    expect(active).toContain(firing(0));
    expect(unknown).toContain(firing(0));
    expect(unknown).toContain(
      `driftless_alert_state{alert="${ids.alertId}",name="ingest-lag",state="snoozed_until_monday"} 1`,
    );
  });

  it("takes its firing states from DRIFTLESS_ALERT_FIRING_STATES, compared without regard to case", async () => {
    const d = await run.start({ DRIFTLESS_ALERT_FIRING_STATES: "alert, Active" });

    const ok = await metricsWithState(d, "OK");
    run.simulator.setAlertState(ids.alertId, "active");
    const active = await metricsWithState(d, "active");
    run.simulator.setAlertState(ids.alertId, "ALERT");
    const alert = await metricsWithState(d, "ALERT");

    expect(ok).toContain(firing(0));
    expect(active).toContain(firing(1));
    expect(alert).toContain(firing(1));
  });

  it("leaves with its watch: no series once the AlertWatch is deleted from git", async () => {
    const d = await run.start();
    await metricsWithState(d, "OK");

    await run.layout.publish({ "keys/ci-deployer.yaml": apiKey("ci-deployer") });
    const text = await until(async () => {
      const t = await metricsOf(d);
      return t.includes("driftless_alert_state{") ? undefined : t;
    });

    expect(text).not.toContain("driftless_alert_firing{");
  });
});

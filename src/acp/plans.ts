import { randomUUID } from "node:crypto";
import type { ClientCapabilities, SessionUpdate } from "@agentclientprotocol/sdk";
import type { SessionUpdate as UnstableUpdate } from "@agentclientprotocol/sdk/unstable";
import type { PlanEntry } from "../tool/context.js";

/** plan_update and plan_removed are typed only in the SDK's /unstable entry; the wire is the same. */
const unstable = (update: UnstableUpdate): SessionUpdate => update as unknown as SessionUpdate;

/**
 * The todo tool's plans as the editor sees them. A client that advertises
 * `clientCapabilities.plan` gets `plan_update` keyed by a planId: one per session, and one per
 * subagent (the task call that runs it), so a child's plan never replaces its parent's; an empty
 * list removes a shown plan (`plan_removed`). Other clients get the legacy whole `plan`.
 */
export class PlanViews {
  /** planId by owner: "" for the session itself, else the task call that started the subagent. */
  private readonly ids = new Map<string, string>();
  private readonly shown = new Set<string>();
  private readonly planOps: boolean;

  constructor(
    capabilities: ClientCapabilities,
    private readonly update: (update: SessionUpdate) => Promise<void>,
  ) {
    // The field exists only in the /unstable types: `{}` opts in, omitted or null does not.
    this.planOps = (capabilities as { plan?: unknown }).plan != null;
  }

  async show(entries: PlanEntry[], parentCallId?: string): Promise<void> {
    const acpEntries = entries.map((e) => ({ content: e.content, status: e.status, priority: e.priority }));
    if (!this.planOps) {
      await this.update({ sessionUpdate: "plan", entries: acpEntries });
      return;
    }
    const owner = parentCallId ?? "";
    let planId = this.ids.get(owner);
    if (!planId) {
      planId = `plan_${randomUUID()}`;
      this.ids.set(owner, planId);
    }
    if (entries.length === 0) {
      // Nothing to remove when no plan went out yet.
      if (!this.shown.delete(planId)) return;
      await this.update(unstable({ sessionUpdate: "plan_removed", planId }));
      return;
    }
    this.shown.add(planId);
    await this.update(unstable({ sessionUpdate: "plan_update", plan: { type: "items", planId, entries: acpEntries } }));
  }
}

/**
 * A failed allocation rescheduled, as Nomad 1.1.2 does it: the server's alloc-failure evaluation in
 * the write that reports the failure (nomad/node_endpoint.go UpdateAlloc), a follow-up evaluation
 * waiting until the reschedule policy's delay has passed (WaitUntil, the allocation's
 * FollowupEvalID), then the replacement naming the failed allocation, with its reschedule tracker.
 * In an active deployment the deployment watcher first marks the allocation for rescheduling.
 */
import type { Frame, StreamEvent } from './support/eventTap.js';
import { allocOf, checkFrames, failingJob, register, streamJobs, type JsonObject } from './support/scenario.js';
import { useTarget } from './support/target.js';

const RESCHEDULE_5S = { Attempts: 1, Unlimited: false, Interval: 3_600e9, Delay: 5e9, DelayFunction: 'constant', MaxDelay: 0 };

const evaluationOf = (event: StreamEvent): JsonObject => event.Payload.Evaluation as JsonObject;
const events = (frames: readonly Frame[]): StreamEvent[] => frames.flatMap((f) => [...f.Events!]);
const finishedAt = (alloc: JsonObject): number => Date.parse(String((alloc.TaskStates as Record<string, { FinishedAt: string }>).t!.FinishedAt));

describe('reschedules', () => {
  const target = useTarget();

  test('a failed batch allocation: an alloc-failure evaluation with the failure, a follow-up until the delay, then the replacement', async () => {
    const id = target.jobId('reschedule');
    const stream = await streamJobs(target, [id]);
    await register(target, failingJob(target, id, { type: 'batch', exitCode: 3, runMs: 300, times: 2, reschedule: RESCHEDULE_5S }));
    const failedIds = (frames: readonly Frame[]): Set<unknown> => new Set(events(frames).filter((e) => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'failed').map((e) => allocOf(e).ID));
    await stream.until('the replacement failed too', (frames) => failedIds(frames).size === 2, 30_000);
    await stream.fence();
    const all = stream.frames();
    // The failure report, and beside it at the same index the server's alloc-failure evaluation.
    const isFailed = (e: StreamEvent): boolean => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'failed';
    const failedAt = all.findIndex((f) => f.Events!.some(isFailed));
    const failedReport = all[failedAt]!.Events!.find(isFailed)!;
    const failed = allocOf(failedReport);
    expect(failedReport.Type).toBe('AllocationUpdated');
    expect(((failed.TaskStates as Record<string, { Events: { Type: string }[] }>).t!.Events.map((e) => e.Type))).toEqual(['Received', 'Task Setup', 'Started', 'Terminated', 'Not Restarting']);
    const beside = all[failedAt + 1]!;
    expect(beside.Index).toBe(all[failedAt]!.Index);
    const failure = evaluationOf(beside.Events!.find((e) => e.Topic === 'Evaluation')!);
    expect(failure).toMatchObject({ TriggeredBy: 'alloc-failure', Status: 'pending', Type: 'batch' });
    expect(failure.JobModifyIndex).toBeUndefined();
    // Its pass: a follow-up evaluation first, then the plan naming it on the allocation, then done.
    const later = all.slice(failedAt + 2);
    const followupEvent = later.flatMap((f) => f.Events!).find((e) => e.Topic === 'Evaluation' && evaluationOf(e).WaitUntil !== undefined)!;
    const followup = evaluationOf(followupEvent);
    expect(followupEvent.Type).toBe('EvaluationUpdated');
    expect(followup).toMatchObject({ TriggeredBy: 'alloc-failure', Status: 'pending', PreviousEval: failure.ID, StatusDescription: 'created for delayed rescheduling' });
    expect(Date.parse(String(followup.WaitUntil))).toBe(finishedAt(failed) + 5_000);
    const named = later.find((f) => f.Events!.some((e) => e.Topic === 'Allocation' && allocOf(e).FollowupEvalID === followup.ID))!;
    expect(named.Index).toBeGreaterThan(followupEvent.Index);
    expect(named.Events!.map((e) => `${e.Topic}/${e.Type}`).sort()).toEqual(['Allocation/PlanResult', 'Evaluation/PlanResult']);
    // At WaitUntil: the replacement, the failed allocation stopped and pointing at it.
    const replaced = later.find((f) => f.Events!.some((e) => e.Topic === 'Allocation' && allocOf(e).PreviousAllocation === failed.ID && e.Type === 'PlanResult'))!;
    const replacement = allocOf(replaced.Events!.find((e) => e.Topic === 'Allocation' && allocOf(e).PreviousAllocation === failed.ID)!);
    expect(replaced.at - finishedAt(failed)).toBeGreaterThanOrEqual(4_900);
    expect(replacement).toMatchObject({ EvalID: followup.ID, ClientStatus: 'pending', Name: failed.Name });
    expect((replacement.RescheduleTracker as { Events: JsonObject[] }).Events).toEqual([expect.objectContaining({ PrevAllocID: failed.ID, Delay: 5e9 })]);
    expect(allocOf(replaced.Events!.find((e) => e.Topic === 'Allocation' && allocOf(e).ID === failed.ID)!)).toMatchObject({
      DesiredStatus: 'stop', DesiredDescription: 'alloc was rescheduled because it failed', NextAllocation: replacement.ID, FollowupEvalID: followup.ID,
    });
    // The replacement failed too: one reschedule allowed per hour, so no more evaluations.
    const second = all.findIndex((f) => f.Events!.some((e) => e.Topic === 'Allocation' && allocOf(e).ID === replacement.ID && allocOf(e).ClientStatus === 'failed'));
    expect(all.slice(second).flatMap((f) => f.Events!).filter((e) => e.Topic === 'Evaluation')).toEqual([]);
    stream.close();
  });

  test('a failed allocation of a deployment: unhealthy at once, marked for rescheduling by the deployment watcher, then rescheduled', async () => {
    const id = target.jobId('deployfail');
    const stream = await streamJobs(target, [id]);
    await register(target, failingJob(target, id, {
      exitCode: 3, runMs: 300, times: 1,
      reschedule: { Attempts: 0, Unlimited: true, Interval: 0, Delay: 5e9, DelayFunction: 'constant', MaxDelay: 0 },
      group: { Update: { MaxParallel: 1, HealthCheck: 'task_states', MinHealthyTime: 1e9, HealthyDeadline: 20e9, ProgressDeadline: 60e9, AutoRevert: false, AutoPromote: false, Canary: 0, Stagger: 30e9 } },
    }));
    const frames = await stream.until('the replacement running', (all) => events(all).some((e) => e.Topic === 'Allocation' && allocOf(e).PreviousAllocation && allocOf(e).ClientStatus === 'running'), 30_000);
    checkFrames(frames, () => deploymentFailure(frames));
    stream.close();
  });

  /**
   * The deployment watcher reacts to the client's health report, not to the allocation's client
   * status: the two usually come in one sync, but a loaded client can send the health first. So the
   * case follows the first report of the allocation unhealthy, and the marking of that allocation.
   */
  function deploymentFailure(frames: readonly Frame[]): void {
    const isUnhealthy = (e: StreamEvent): boolean => e.Topic === 'Allocation' && (allocOf(e).DeploymentStatus as JsonObject | undefined)?.Healthy === false;
    const failedFrame = frames.find((f) => f.Events!.some(isUnhealthy))!;
    const failed = allocOf(failedFrame.Events!.find(isUnhealthy)!);
    // The client's health tracker reports it unhealthy at its task's failure; the deployment counts it.
    expect(events(frames).some((e) => e.Topic === 'Allocation' && allocOf(e).ID === failed.ID && allocOf(e).ClientStatus === 'failed')).toBe(true);
    expect(((failed.TaskStates as Record<string, { Events: { Type: string; DisplayMessage: string }[] }>).t!.Events.at(-1))).toMatchObject({ Type: 'Alloc Unhealthy', DisplayMessage: 'Unhealthy because of failed task' });
    expect(failedFrame.Events!.find((e) => e.Topic === 'Deployment')?.Payload.Deployment).toMatchObject({ TaskGroups: { g: { UnhealthyAllocs: 1 } } });
    const after = frames.filter((f) => f.Index! >= failedFrame.Index!);
    const failure = evaluationOf(events(after).find((e) => e.Topic === 'Evaluation' && evaluationOf(e).TriggeredBy === 'alloc-failure')!);
    // Its own pass plans nothing: the deployment watcher has the allocation.
    const failureDone = after.find((f) => f.Events!.some((e) => e.Topic === 'Evaluation' && evaluationOf(e).ID === failure.ID && evaluationOf(e).Status === 'complete'))!;
    expect(failureDone.Events!.map((e) => `${e.Topic}/${e.Type}`).filter((t) => t.startsWith('Evaluation'))).toEqual(['Evaluation/EvaluationUpdated']);
    expect(events(after).some((e) => e.Type === 'PlanResult' && e.Topic === 'Evaluation' && evaluationOf(e).ID === failure.ID)).toBe(false);
    const markedEvent = (e: StreamEvent): boolean => e.Type === 'AllocationUpdateDesiredStatus' && e.Topic === 'Allocation' && allocOf(e).ID === failed.ID;
    const marked = after.find((f) => f.Events!.some(markedEvent))!;
    expect(allocOf(marked.Events!.find(markedEvent)!)).toMatchObject({ DesiredTransition: { Reschedule: true } });
    const watcher = evaluationOf(marked.Events!.find((e) => e.Topic === 'Evaluation')!);
    expect(watcher).toMatchObject({ TriggeredBy: 'deployment-watcher', Status: 'pending', DeploymentID: failed.DeploymentID });
    // deployment_watcher.go perJobEvalBatchPeriod (1 s), seen from the frames' arrival: a few ms either way on the wall clock.
    expect(marked.at - failedFrame.at).toBeGreaterThanOrEqual(950);
    expect(marked.at - failedFrame.at).toBeLessThan(3_000);
    const followup = evaluationOf(events(after).find((e) => e.Topic === 'Evaluation' && evaluationOf(e).WaitUntil !== undefined)!);
    expect(followup).toMatchObject({ TriggeredBy: 'alloc-failure', PreviousEval: watcher.ID });
    expect(Date.parse(String(followup.WaitUntil))).toBe(finishedAt(failed) + 5_000);
    const replacement = allocOf(events(after).find((e) => e.Topic === 'Allocation' && allocOf(e).PreviousAllocation === failed.ID)!);
    expect(replacement).toMatchObject({ EvalID: followup.ID, DeploymentID: failed.DeploymentID });
  }
});

using System.Diagnostics;
using Queue.Core;
using Queue.Core.Admin;
using Queue.Core.Audit;
using Queue.Core.Claims;
using Queue.Core.Jobs;
using Queue.Core.Ordering;

namespace Queue.Tests.Work;

/// <summary>
/// The claim-ahead buffer hands out what the database would: a tenant's new work takes its turn at once, and a cancel,
/// block or override reaches the buffer before its own answer (docs/DESIGN.md "Claim-ahead that keeps the policy").
/// </summary>
public sealed class FairClaimAheadTests(FairClaimAheadFixture fx) : IClassFixture<FairClaimAheadFixture>
{
    [Fact]
    public async Task A_tenant_whose_new_job_waits_in_the_database_is_served_by_the_next_claim_while_another_tenants_items_are_buffered()
    {
        var (flood, _) = await fx.NewCustomerAsync();
        var (small, _) = await fx.NewCustomerAsync();
        var big = await fx.NewJobAsync(flood.Id, 200, ["fair-new"]);
        Assert.All(await fx.ClaimJobsAsync("fair-new", 3), j => Assert.Equal(big, j));
        Assert.True(fx.Service<ClaimDispatcher>().Buffered > 0, "the flood's items are claimed ahead");

        var job = await fx.NewJobAsync(small.Id, 5, ["fair-new"]);
        fx.Service<WorkSignal>().Notify(); // what a submission does once it commits (JobService)
        var next = await fx.ClaimJobsAsync("fair-new", 4);

        // Level with the flood when it shows up, it may lose the first tie to the older tenant (FairShare), never two.
        Assert.Contains(job, next.Take(2));
        Assert.True(next.Count(j => j == job) >= 2, $"the small tenant got {next.Count(j => j == job)} of 4 claims: {string.Join(", ", next)}");
    }

    [Fact]
    public async Task A_cancelled_jobs_buffered_items_are_never_handed_out_after_the_cancel_answers()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 50, ["fair-cancel"]);
        Assert.All(await fx.ClaimJobsAsync("fair-cancel", 3), j => Assert.Equal(job, j));
        Assert.True(fx.Service<ClaimDispatcher>().Buffered > 0, "the job's items are claimed ahead");

        await using (KeepReadingTheEpoch())
        {
            var cancelled = Stopwatch.StartNew();
            Assert.Equal(Outcome.Ok, await fx.Service<JobService>().CancelAsync(tenant.Id, job, default));
            Assert.True(cancelled.Elapsed >= EpochLease.Settle, $"the cancel answered {cancelled.Elapsed.TotalMilliseconds} ms after it began");

            Assert.All(await fx.ClaimJobsAsync("fair-cancel", 3), j => Assert.Equal(0, j));
        }
    }

    [Fact]
    public async Task A_blocked_jobs_buffered_items_are_not_handed_out_and_an_override_wins_the_next_claim()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var first = await fx.NewJobAsync(tenant.Id, 40, ["fair-admin"]);
        var second = await fx.NewJobAsync(tenant.Id, 60, ["fair-admin"]);
        var third = await fx.NewJobAsync(tenant.Id, 80, ["fair-admin"]);
        Assert.All(await fx.ClaimJobsAsync("fair-admin", 3), j => Assert.Equal(first, j));
        var actions = new JobActions(fx.DataSource, fx.Service<OrderingLanes>(), fx.Clock);
        var tech = await fx.Technicians.CreateAsync("tech-" + Guid.NewGuid().ToString("N")[..8], "a long enough password", default);
        var actor = new Actor(tech.Id, tech.Login);

        await using var reads = KeepReadingTheEpoch();

        var overridden = Stopwatch.StartNew();
        Assert.Equal(ActionStatus.Done, (await actions.SetOverrideAsync(third, actor, -5, "customer escalation", fx.Now.AddHours(1), default)).Status);
        Assert.True(overridden.Elapsed >= EpochLease.Settle, $"the override answered {overridden.Elapsed.TotalMilliseconds} ms after it began");
        Assert.Equal(third, (await fx.ClaimJobsAsync("fair-admin", 1))[0]);

        Assert.Equal(ActionStatus.Done, (await actions.SetBlockedAsync(first, actor, true, "bad input", default)).Status);
        Assert.Equal(ActionStatus.Done, (await actions.ClearOverrideAsync(third, actor, "done", default)).Status);
        Assert.All(await fx.ClaimJobsAsync("fair-admin", 5), j => Assert.NotEqual(first, j));
    }

    /// <summary>
    /// A busy filter's reads of the epoch: a handout right after a writer's answer finds a fresh read, often one sent
    /// before the writer's commit, so the answer must wait until no such read is fresh. Without that wait, 6 runs of 9
    /// handed out the cancelled, blocked or outranked items; the writers' durations tell it every time.
    /// </summary>
    private EpochReadsKeepComing KeepReadingTheEpoch() => new(fx.Service<ClaimEpoch>());
}

/// <summary>
/// A new job of a tenant with nothing in a busy buffer goes straight into it from its creating transaction, reserved as
/// a claim would reserve it (docs/DESIGN.md "New work straight into the buffer").
/// </summary>
public sealed class NewWorkIntakeTests(FairClaimAheadFixture fx) : IClassFixture<FairClaimAheadFixture>
{
    [Fact]
    public async Task A_new_job_of_a_tenant_with_nothing_buffered_is_reserved_by_its_own_transaction_and_handed_out_by_turn()
    {
        var (small, big) = await FloodClaimedAsync("intake-new");

        var (job, held) = await SubmitAsync(small.Id, "intake-new", 4);

        Assert.True(held, "the job went straight to the buffer");
        Assert.Equal(4, await fx.ScalarAsync<long>(
            "SELECT COUNT(*) FROM items WHERE job_id = @Id AND state = 1 AND lease_expires_at IS NULL AND lease_token IS NOT NULL AND due_at > @Now",
            new { Id = job, fx.Now }));
        Assert.Equal(0, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM ordering WHERE job_id = @Id AND available_at <= @Now", new { Id = job, fx.Now }));
        // By turn with the flood: every other handout. The wake loop may signal the flood's own rows (written here
        // without a submission's signal) at any moment, and a signalled claim serves its caller from the database,
        // which costs the small tenant that one turn (docs/DESIGN.md "Claim-ahead that keeps the policy"): a margin
        // of two claims, not an exact count.
        var next = await fx.ClaimJobsAsync("intake-new", 10);
        Assert.Contains(job, next.Take(3));
        Assert.Equal(4, next.Count(j => j == job));
    }

    [Fact]
    public async Task A_new_job_of_a_tenant_that_already_has_buffered_work_is_created_claimable_behind_it()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var first = await fx.NewJobAsync(tenant.Id, 100, ["intake-own"]);
        Assert.All(await fx.ClaimJobsAsync("intake-own", 3), j => Assert.Equal(first, j));

        var dispatcher = fx.Service<ClaimDispatcher>();
        var paused = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        // No claim transaction begins while the new job is looked at: a refill of the buffer (its first job's items go
        // stale and back) would claim the new job's items, and the count below saw 2 of them taken (CI, once). Nor runs:
        // a refill that began before the hook saw 1 taken (CI, once more).
        dispatcher.BeforeTransaction = _ => paused.Task;
        try
        {
            await Eventually.UntilAsync(() => dispatcher.TransactionsRunning == 0, "the claim transaction that began before the hook to end", seconds: 10);
            var (job, held) = await SubmitAsync(tenant.Id, "intake-own", 3);

            Assert.False(held);
            Assert.Equal(0, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Id AND state <> 0", new { Id = job }));
        }
        finally
        {
            dispatcher.BeforeTransaction = null;
            paused.TrySetResult();
        }
        var (other, _) = await fx.NewCustomerAsync();
        Assert.True((await SubmitAsync(other.Id, "intake-own", 3)).Held, "another tenant's job beside the same buffer goes straight in");
    }

    [Fact]
    public async Task A_cancelled_job_that_went_straight_to_the_buffer_is_never_handed_out()
    {
        var (flood, _) = await fx.NewCustomerAsync();
        var (small, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(flood.Id, 200, ["intake-cancel"]);
        await fx.ClaimJobsAsync("intake-cancel", 3);
        var (job, held) = await SubmitAsync(small.Id, "intake-cancel", 4);
        Assert.True(held);

        Assert.Equal(Outcome.Ok, await fx.Service<JobService>().CancelAsync(small.Id, job, default));

        Assert.DoesNotContain(job, await fx.ClaimJobsAsync("intake-cancel", 10));
    }

    [Fact]
    public async Task A_new_job_shares_the_callers_waiting_on_a_claim_transaction_that_began_before_it_by_turn()
    {
        var (small, big) = await FloodClaimedAsync("intake-parked");
        var dispatcher = fx.Service<ClaimDispatcher>();
        using var hold = new HeldTransaction(dispatcher);
        var calls = Enumerable.Range(0, 12).Select(_ => dispatcher.ClaimAsync(new ClaimRequest("parked", ["intake-parked"], 1, 300), default)).ToList();
        await hold.Entered.WaitAsync(TimeSpan.FromSeconds(10));

        var (job, held) = await SubmitAsync(small.Id, "intake-parked", 12);

        Assert.True(held, "the job went straight to the buffer");
        var first = await Task.WhenAny(calls).WaitAsync(TimeSpan.FromSeconds(5));
        Assert.False(hold.Released);
        Assert.Equal([job], (await first).Select(i => i.JobId));
        // Served at once, while the transaction is still held: more than the one caller served alone before.
        await Eventually.UntilAsync(() => calls.Count(c => c.IsCompleted) >= 2, "a second caller served from the new job", 5);
        hold.Release();
        var answers = await Task.WhenAll(calls).WaitAsync(TimeSpan.FromSeconds(10));
        var ids = answers.SelectMany(a => a).Select(i => i.Id).ToList();
        Assert.Equal(ids.Count, ids.Distinct().Count());
        Assert.All(answers, a => Assert.Single(a));
        // The new tenant's credit and every other turn after it: not all twelve.
        var early = answers.SelectMany(a => a).Count(i => i.JobId == job);
        Assert.InRange(early, 2, 11);
        // The items the held transaction took for the callers served early go back: leased are at most the three
        // claimed first and those answered from the transaction (leases handed out from memory are written later).
        var floodAnswered = answers.SelectMany(a => a).Count(i => i.JobId == big);
        Assert.Equal(12 - early, floodAnswered);
        await Eventually.UntilAsync(async () => await fx.ScalarAsync<long>(
            "SELECT COUNT(*) FROM items WHERE job_id = @Big AND state = 1 AND lease_expires_at IS NOT NULL", new { Big = big }) <= 3 + floodAnswered,
            "the served callers' items from the transaction are given back", 10);
    }

    [Fact]
    public async Task A_caller_sent_to_a_transaction_for_one_tenants_turn_lets_the_next_caller_take_another_tenants_held_item_at_once()
    {
        var (small, _) = await FloodClaimedAsync("intake-promise");
        var dispatcher = fx.Service<ClaimDispatcher>();
        // The wake loop may yet signal the flood's rows (written without a submission's signal): one claim without the
        // hook below takes that signal's transaction, so the buffer is trusted again before the transactions wait.
        await Task.Delay(300);
        await dispatcher.ClaimAsync(new ClaimRequest("promise", ["intake-promise"], 1, 300), default);
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        // Every claim transaction waits from here, refills too: the flood's buffered items are handed out, and its
        // later turns are in the database.
        dispatcher.BeforeTransaction = _ => release.Task;
        try
        {
            await Eventually.UntilAsync(() => dispatcher.TransactionsRunning == 0, "the claim transaction that began before the hook to end", seconds: 10);
            for (var n = dispatcher.BufferedFor(new ClaimRequest("promise", ["intake-promise"], 1, 300)); n > 0; n--)
            {
                await dispatcher.ClaimAsync(new ClaimRequest("promise", ["intake-promise"], 1, 300), default).WaitAsync(TimeSpan.FromSeconds(5));
            }
            var (job, held) = await SubmitAsync(small.Id, "intake-promise", 12);
            Assert.True(held, "the small job went straight to the buffer");

            // The small tenant's credit, then every other turn: the first of the flood's turns sends its caller to a
            // transaction, which waits.
            Task<IReadOnlyList<TakenItem>>? waiting = null;
            for (var i = 0; i < 12 && waiting is null; i++)
            {
                var call = dispatcher.ClaimAsync(new ClaimRequest("promise", ["intake-promise"], 1, 300), default);
                if (await Task.WhenAny(call, Task.Delay(TimeSpan.FromSeconds(1))) != call)
                {
                    waiting = call;
                }
                else
                {
                    Assert.Equal([job], (await call).Select(t => t.JobId));
                }
            }
            Assert.NotNull(waiting);

            // That caller took the flood's turn on its way: the next one is the small tenant's, from memory, at once.
            var next = await dispatcher.ClaimAsync(new ClaimRequest("promise", ["intake-promise"], 1, 300), default).WaitAsync(TimeSpan.FromSeconds(5));

            Assert.Equal([job], next.Select(i => i.JobId));
            Assert.False(waiting.IsCompleted);
        }
        finally
        {
            dispatcher.BeforeTransaction = null;
            release.TrySetResult();
        }
    }

    [Fact]
    public async Task A_caller_that_gave_up_on_a_claim_transaction_no_longer_counts_as_a_call_in_progress()
    {
        await FloodClaimedAsync("inside-gone");
        var dispatcher = fx.Service<ClaimDispatcher>();
        using var hold = new HeldTransaction(dispatcher);
        var request = new ClaimRequest("gone", ["inside-gone"], 1, 300);
        using var leaving = new CancellationTokenSource();
        var call = dispatcher.ClaimAsync(request, leaving.Token);
        await hold.Entered.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(1, dispatcher.InsideFor(request));

        await leaving.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call);
        Assert.Equal(0, dispatcher.InsideFor(request));
    }

    [Fact]
    public async Task A_caller_that_gave_up_on_a_claim_transaction_is_not_handed_a_new_jobs_item()
    {
        var (small, big) = await FloodClaimedAsync("intake-gone");
        var dispatcher = fx.Service<ClaimDispatcher>();
        using var hold = new HeldTransaction(dispatcher);
        using var leaving = new CancellationTokenSource();
        var call = dispatcher.ClaimAsync(new ClaimRequest("gone", ["intake-gone"], 1, 300), leaving.Token);
        await hold.Entered.WaitAsync(TimeSpan.FromSeconds(10));
        await leaving.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call);
        var buffered = dispatcher.Buffered;

        var (_, held) = await SubmitAsync(small.Id, "intake-gone", 4);

        Assert.True(held, "the job went straight to the buffer");
        // The adoption found only a caller that had left: all four of the job's items are still buffered.
        Assert.Equal(buffered + 4, dispatcher.Buffered);
    }

    /// <summary>
    /// Holds the dispatcher's next claim transaction with callers right before it begins, until <see cref="Release"/>,
    /// with answers from memory off meanwhile, so callers reach it whatever the buffer holds. A refill without callers
    /// may come first on a busy box: it goes through.
    /// </summary>
    private sealed class HeldTransaction : IDisposable
    {
        private readonly ClaimDispatcher dispatcher;
        private readonly TaskCompletionSource entered = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly TaskCompletionSource release = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public HeldTransaction(ClaimDispatcher dispatcher)
        {
            this.dispatcher = dispatcher;
            dispatcher.AnswersFromMemory = false;
            dispatcher.BeforeTransaction = callers =>
            {
                if (callers == 0)
                {
                    return Task.CompletedTask;
                }
                entered.TrySetResult();
                return release.Task;
            };
        }

        public Task Entered => entered.Task;

        public bool Released => release.Task.IsCompleted;

        public void Release() => release.TrySetResult();

        public void Dispose()
        {
            dispatcher.BeforeTransaction = null;
            dispatcher.AnswersFromMemory = true;
            release.TrySetResult();
        }
    }

    /// <summary>A flood tenant's 200-item job of <paramref name="task"/>, its first 3 items claimed, and a small tenant with nothing yet.</summary>
    private async Task<(Queue.Core.Security.Tenant Small, long Big)> FloodClaimedAsync(string task)
    {
        var (flood, _) = await fx.NewCustomerAsync();
        var (small, _) = await fx.NewCustomerAsync();
        var big = await fx.NewJobAsync(flood.Id, 200, [task]);
        Assert.All(await fx.ClaimJobsAsync(task, 3), j => Assert.Equal(big, j));
        return (small, big);
    }

    private async Task<(long JobId, bool Held)> SubmitAsync(long tenantId, string task, int documents)
    {
        var docs = Enumerable.Range(0, documents).Select(d => new InlineDocument($"d{d}.txt", "text/plain", [(byte)'x'])).ToList();
        var (_, created) = await fx.Service<JobService>().CreateAsync(tenantId, new NewJob("small", [task], false, docs), null, default);
        return (created.JobId, created.Held);
    }
}

public sealed class TaskFilterBoundTests(HandoutFixture fx) : IClassFixture<HandoutFixture>
{
    [Fact]
    public async Task Task_filters_are_bounded_and_the_idle_ones_are_forgotten()
    {
        var dispatcher = fx.Service<ClaimDispatcher>();
        for (var batch = 0; batch < (ClaimDispatcher.MaxFilters + 100) / 50; batch++)
        {
            await Task.WhenAll(Enumerable.Range(batch * 50, 50).Select(i =>
                dispatcher.ClaimAsync(new ClaimRequest("w", [$"bound-{i}"], 1, 30), default)));
        }
        Assert.InRange(dispatcher.Filters, 1, ClaimDispatcher.MaxFilters);

        fx.Clock.Advance(TimeSpan.FromMinutes(1));
        await dispatcher.ReleaseStaleAsync(all: false, default);

        Assert.Equal(0, dispatcher.Filters);
    }
}

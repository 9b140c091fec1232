using System.Collections.Concurrent;
using System.Data;
using System.Security.Cryptography;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>What a claim slot becomes: a worker's lease, or a reservation held in this process's claim-ahead buffer.</summary>
public sealed record ClaimSlot(string? Worker, DateTime Until, bool Reservation);

/// <summary>An item taken by a claim transaction, with everything the /next answer needs.</summary>
public sealed record TakenItem(long Id, long JobId, long TenantId, long DocumentId, string Task, int Attempt, byte[] Token,
    DateTime Until, bool Reservation)
{
    public string TenantName { get; set; } = "";

    public string DocumentName { get; set; } = "";

    public string ContentType { get; set; } = "";
}

public enum FinishOutcome
{
    Done,
    NotFound,
    Stale,
}

/// <summary>A lease as the worker presents it.</summary>
public readonly record struct LeaseRef(long ItemId, byte[] Token);

public sealed record LeaseDocument(long Id, string Name, string ContentType, long Size);

/// <summary>Process-wide counts the web layer turns into metrics and the stats flusher into rows.</summary>
public sealed class ClaimCounters
{
    private long leasesExpired;

    public long LeasesExpired => Interlocked.Read(ref leasesExpired);

    public event Action<int>? LeaseExpired;

    internal void OnLeaseExpired()
    {
        Interlocked.Increment(ref leasesExpired);
        LeaseExpired?.Invoke(1);
    }
}

/// <summary>
/// The database side of claims and leases. Every method is one short READ COMMITTED transaction (or runs inside the
/// caller's); locking reads come before writes, and a claim never waits for a row another claimer holds.
/// </summary>
public sealed class ClaimEngine(MySqlDataSource db, ILaneSelector selector, TimeProvider clock, ClaimCounters counters, LaneJanitor janitor)
{
    private const int LanesPerRound = 8;

    /// <summary>Selector rounds per claim at most: enough for any batch, bounded if lanes keep yielding nothing.</summary>
    private const int MaxRounds = 64;
    private const string LeaseExpiredError = "lease expired";

    private readonly ConcurrentDictionary<long, string> tenantNames = new();

    /// <summary>
    /// Claims one item per slot (fewer if the queue runs dry) for a worker accepting <paramref name="tasks"/>, in claim
    /// order, inside the caller's transaction. Item k of the answer gets slot k.
    /// </summary>
    /// <remarks>
    /// Round trips per round, whatever the number of lanes: the selector, the head job's lanes, then the round's other
    /// lanes in one batch (only when the head did not fill every slot), the writes. Lanes the claim emptied get their
    /// hint in two more round trips at the end, so the next claims skip them inside the index instead of probing them.
    /// </remarks>
    public async Task<List<TakenItem>> TakeAsync(MySqlConnection conn, MySqlTransaction tx, IReadOnlyList<string> tasks,
        IReadOnlyList<ClaimSlot> slots, DateTime now, CancellationToken ct)
    {
        var taken = new List<TakenItem>(slots.Count);
        if (slots.Count == 0)
        {
            return taken;
        }
        var writes = new List<MySqlBatchCommand>();
        var visited = new HashSet<(long, string)>();
        var emptied = new List<Lane>();
        for (var round = 0; round < MaxRounds && taken.Count < slots.Count; round++)
        {
            var limit = visited.Count + Math.Max(LanesPerRound, slots.Count - taken.Count);
            var lanes = await selector.SelectAsync(conn, tx, new LaneQuery(tasks, now, limit), ct);
            var fresh = lanes.Where(l => !visited.Contains((l.JobId, l.Task))).ToList();
            if (fresh.Count == 0)
            {
                break;
            }
            var groups = JobGroups(fresh);
            // The head job alone first: when it fills every slot (a big job), no other lane is locked for nothing.
            var wanted = slots.Count - taken.Count;
            var locked = await LockItemsAsync(conn, tx, groups.GetRange(0, 1), wanted, now, ct);
            var headRows = locked[0].Sum(r => r.Count);
            if (groups.Count > 1 && headRows < wanted)
            {
                locked.AddRange(await LockItemsAsync(conn, tx, groups.GetRange(1, groups.Count - 1), wanted - headRows, now, ct));
            }
            // A lane that used up its quota stays unvisited, so the selector is asked again after this round (it may
            // offer the lane again); the round itself goes on through the other lanes, so that a selector can hand out
            // one round of quotas across many tenants per query (tenant-fair).
            for (var gi = 0; gi < locked.Count && taken.Count < slots.Count; gi++)
            {
                var group = groups[gi];
                var want = LimitOf(group[0], slots.Count - taken.Count);
                var rows = new List<LockedRow>();
                for (var k = 0; k < group.Count; k++)
                {
                    var got = locked[gi][k];
                    if (group[k].Quota is not { } q || got.Count < q)
                    {
                        visited.Add((group[k].JobId, group[k].Task));
                    }
                    rows.AddRange(got);
                }
                if (group.Count > 1)
                {
                    rows.Sort(static (a, b) => a.Id.CompareTo(b.Id));
                }
                var used = Math.Min(want, rows.Count);
                var count = 0;
                foreach (var row in rows.Take(used))
                {
                    if (await TakeRowAsync(conn, tx, row, slots[taken.Count], group[0].TenantId, now, taken, writes, ct))
                    {
                        count++;
                    }
                }
                // Everything claimable the lanes showed is taken now. The lanes may be empty (certainly when one gave
                // fewer rows than asked; maybe when it gave exactly that many, the one item of a one-item job): their
                // hint is checked in the closing batch, so the next claim does not probe a lane whose items we hold.
                if (rows.Count <= used)
                {
                    emptied.AddRange(group);
                }
                if (count > 0)
                {
                    selector.Claimed(group[0].TenantId, count);
                }
            }
            // Written before the next round: SKIP LOCKED does not skip our own locks, so a lane visited again must
            // already show these items as taken. The last round's writes go with the closing batch instead.
            if (taken.Count < slots.Count && round < MaxRounds - 1)
            {
                await WriteAsync(conn, tx, writes, ct);
            }
        }
        await CloseAsync(conn, tx, writes, emptied, taken, now, ct);
        return taken;
    }

    /// <summary>How many rows a lane is asked for: what is still wanted, within its quota.</summary>
    private static int LimitOf(Lane lane, int want) => lane.Quota is { } q ? Math.Min(want, q) : want;

    /// <summary>Consecutive lanes of one job (without quotas) form one group, so the job's lowest item id wins across its tasks.</summary>
    private static List<List<Lane>> JobGroups(List<Lane> fresh)
    {
        var groups = new List<List<Lane>>();
        for (var i = 0; i < fresh.Count;)
        {
            var j = i + 1;
            while (j < fresh.Count && fresh[j].JobId == fresh[i].JobId && fresh[j].Quota is null && fresh[i].Quota is null)
            {
                j++;
            }
            groups.Add(fresh.GetRange(i, j - i));
            i = j;
        }
        return groups;
    }

    /// <summary>
    /// Locks the claimable items of every lane of <paramref name="groups"/>, lowest id first, in one round trip (one
    /// statement per lane in a batch); each lane is asked for at most <paramref name="want"/> (its quota, if less).
    /// </summary>
    private static async Task<List<List<List<LockedRow>>>> LockItemsAsync(MySqlConnection conn, MySqlTransaction tx,
        List<List<Lane>> groups, int want, DateTime now, CancellationToken ct)
    {
        await using var batch = new MySqlBatch(conn, tx);
        foreach (var lane in groups.SelectMany(g => g))
        {
            var cmd = new MySqlBatchCommand(ClaimSql.LockLaneItems);
            cmd.Parameters.AddWithValue("@JobId", lane.JobId);
            cmd.Parameters.AddWithValue("@Task", lane.Task);
            cmd.Parameters.AddWithValue("@Now", now);
            cmd.Parameters.AddWithValue("@Limit", LimitOf(lane, want));
            batch.BatchCommands.Add(cmd);
        }
        var result = new List<List<List<LockedRow>>>(groups.Count);
        await using var reader = await batch.ExecuteReaderAsync(ct);
        var parse = reader.GetRowParser<LockedRow>();
        var first = true;
        foreach (var group in groups)
        {
            var perLane = new List<List<LockedRow>>(group.Count);
            for (var k = 0; k < group.Count; k++)
            {
                if (!first)
                {
                    await reader.NextResultAsync(ct);
                }
                first = false;
                var rows = new List<LockedRow>();
                while (await reader.ReadAsync(ct))
                {
                    rows.Add(parse(reader));
                }
                perLane.Add(rows);
            }
            result.Add(perLane);
        }
        return result;
    }

    /// <summary>
    /// Queues the write that gives <paramref name="row"/> to <paramref name="slot"/>; false when the row is instead an
    /// expired lease that used up its attempts (it goes dead here and takes no slot).
    /// </summary>
    private async Task<bool> TakeRowAsync(MySqlConnection conn, MySqlTransaction tx, LockedRow row, ClaimSlot slot, long tenant, DateTime now,
        List<TakenItem> taken, List<MySqlBatchCommand> writes, CancellationToken ct)
    {
        var expired = row.State == 1 && row.LeaseExpiresAt is not null;
        if (expired)
        {
            counters.OnLeaseExpired();
            await conn.ExecuteAsync(new CommandDefinition(ClaimSql.RecordError,
                new { row.Id, Attempt = row.Attempts, Error = LeaseExpiredError, Now = now }, tx, cancellationToken: ct));
            var max = await conn.ExecuteScalarAsync<int>(new CommandDefinition(ClaimSql.MaxAttemptsOfJob, new { row.JobId }, tx, cancellationToken: ct));
            if (row.Attempts >= max)
            {
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.KillItem, new { row.Id, Error = LeaseExpiredError, Now = now }, tx, cancellationToken: ct));
                await CountFinishedAsync(conn, tx, row.JobId, 0, 1, 0, now, ct);
                return false;
            }
        }
        var token = RandomNumberGenerator.GetBytes(16);
        var cmd = new MySqlBatchCommand(slot.Reservation ? ClaimSql.ReserveItem : ClaimSql.LeaseItem);
        cmd.Parameters.AddWithValue("@Id", row.Id);
        cmd.Parameters.AddWithValue("@Token", token);
        cmd.Parameters.AddWithValue(slot.Reservation ? "@Until" : "@Expires", slot.Until);
        cmd.Parameters.AddWithValue("@Expired", expired);
        cmd.Parameters.AddWithValue("@Now", now);
        if (!slot.Reservation)
        {
            cmd.Parameters.AddWithValue("@Worker", slot.Worker);
        }
        writes.Add(cmd);
        // A reservation does not count as an attempt until it is handed out.
        var attempt = slot.Reservation ? row.Attempts : row.Attempts + 1;
        taken.Add(new TakenItem(row.Id, row.JobId, tenant, row.DocumentId, row.Task, attempt, token, slot.Until, slot.Reservation));
        return true;
    }

    private static async Task WriteAsync(MySqlConnection conn, MySqlTransaction tx, List<MySqlBatchCommand> writes, CancellationToken ct)
    {
        if (writes.Count == 0)
        {
            return;
        }
        await using var batch = new MySqlBatch(conn, tx);
        foreach (var w in writes)
        {
            batch.BatchCommands.Add(w);
        }
        await batch.ExecuteNonQueryAsync(ct);
        writes.Clear();
    }

    /// <summary>
    /// The claim's closing round trip: its last writes, then, for each lane it may have emptied (or found empty), the lane row
    /// locked with SKIP LOCKED and the earliest due time of its active items, then the taken items' documents. A second
    /// round trip hides each emptied lane until its next item falls due, or removes it when it has no active item left.
    /// SKIP LOCKED: an upload's LEAST(available_at, now) is never lost under our hint, and a claim never waits for a lane
    /// a rewrite or an upload holds (those set the hint themselves). The due times are read after this claim's writes,
    /// so its own leases count. One statement per lane or document: batch commands carry no list parameters.
    /// </summary>
    private async Task CloseAsync(MySqlConnection conn, MySqlTransaction tx, List<MySqlBatchCommand> writes, List<Lane> emptied,
        List<TakenItem> taken, DateTime now, CancellationToken ct)
    {
        var lanes = emptied.Select(l => (l.JobId, l.Task)).Distinct().ToList();
        var documents = taken.Select(t => t.DocumentId).Distinct().ToList();
        if (lanes.Count == 0 && documents.Count == 0)
        {
            await WriteAsync(conn, tx, writes, ct);
            return;
        }
        var hints = new List<(long JobId, string Task, DateTime? NextDue)>();
        var docs = new Dictionary<long, DocRow>();
        await using (var batch = new MySqlBatch(conn, tx))
        {
            foreach (var w in writes)
            {
                batch.BatchCommands.Add(w);
            }
            writes.Clear();
            foreach (var (jobId, task) in lanes)
            {
                batch.BatchCommands.Add(LaneCommand(ClaimSql.LockLane, jobId, task));
                batch.BatchCommands.Add(LaneCommand(ClaimSql.LaneNextDue, jobId, task));
            }
            foreach (var id in documents)
            {
                var cmd = new MySqlBatchCommand(ClaimSql.DocumentById);
                cmd.Parameters.AddWithValue("@Id", id);
                batch.BatchCommands.Add(cmd);
            }
            await using var reader = await batch.ExecuteReaderAsync(ct);
            var results = new BatchResults(reader);
            foreach (var (jobId, task) in lanes)
            {
                var locked = await results.NextRowAsync(ct);
                while (await reader.ReadAsync(ct))
                {
                }
                DateTime? due = await results.NextRowAsync(ct) && !await reader.IsDBNullAsync(0, ct) ? reader.GetDateTime(0) : null;
                // A lane with an item due now is claimable as it stands: nothing to write.
                if (locked && (due is null || due > now))
                {
                    hints.Add((jobId, task, due));
                }
            }
            foreach (var id in documents)
            {
                if (await results.NextRowAsync(ct))
                {
                    docs[id] = new DocRow(reader.GetInt64(0), reader.GetString(1), reader.GetString(2));
                }
            }
        }
        if (hints.Count > 0)
        {
            await using var batch = new MySqlBatch(conn, tx);
            foreach (var (jobId, task, due) in hints)
            {
                var cmd = LaneCommand(due is null ? ClaimSql.DeleteLane : ClaimSql.SetLaneHint, jobId, task);
                if (due is not null)
                {
                    cmd.Parameters.AddWithValue("@At", due.Value);
                }
                batch.BatchCommands.Add(cmd);
            }
            await batch.ExecuteNonQueryAsync(ct);
        }
        foreach (var t in taken)
        {
            if (docs.TryGetValue(t.DocumentId, out var d))
            {
                t.DocumentName = d.Name;
                t.ContentType = d.ContentType;
            }
            t.TenantName = await TenantNameAsync(conn, tx, t.TenantId, ct);
        }
    }

    private static MySqlBatchCommand LaneCommand(string sql, long jobId, string task)
    {
        var cmd = new MySqlBatchCommand(sql);
        cmd.Parameters.AddWithValue("@JobId", jobId);
        cmd.Parameters.AddWithValue("@Task", task);
        return cmd;
    }

    private async ValueTask<string> TenantNameAsync(MySqlConnection conn, MySqlTransaction tx, long tenantId, CancellationToken ct)
    {
        if (tenantNames.TryGetValue(tenantId, out var name))
        {
            return name;
        }
        // Tenant names never change, so this cache needs no expiry.
        name = await conn.ExecuteScalarAsync<string>(new CommandDefinition(ClaimSql.TenantNameById, new { Id = tenantId }, tx, cancellationToken: ct)) ?? "";
        tenantNames[tenantId] = name;
        return name;
    }

    /// <summary>Hands out reserved items: each becomes a worker's lease, unless its reservation was lost meanwhile.</summary>
    public static async Task<bool[]> ConfirmAsync(MySqlConnection conn, MySqlTransaction tx, IReadOnlyList<(TakenItem Item, string? Worker, DateTime Expires)> handouts,
        DateTime now, CancellationToken ct)
    {
        var ok = new bool[handouts.Count];
        if (handouts.Count == 0)
        {
            return ok;
        }
        await using var batch = new MySqlBatch(conn, tx);
        foreach (var (item, worker, expires) in handouts)
        {
            var cmd = new MySqlBatchCommand(ClaimSql.ConfirmReservation);
            cmd.Parameters.AddWithValue("@Id", item.Id);
            cmd.Parameters.AddWithValue("@Token", item.Token);
            cmd.Parameters.AddWithValue("@Expires", expires);
            cmd.Parameters.AddWithValue("@Worker", worker);
            cmd.Parameters.AddWithValue("@Now", now);
            batch.BatchCommands.Add(cmd);
        }
        await batch.ExecuteNonQueryAsync(ct);
        // MySqlBatch does not report rows per statement here, so read back which ones took: a confirmed item carries
        // our token and a worker's lease expiry.
        var rows = (await conn.QueryAsync<ConfirmedRow>(new CommandDefinition(ClaimSql.ConfirmedLeases,
            new { Ids = handouts.Select(h => h.Item.Id).ToList() }, tx, cancellationToken: ct))).ToDictionary(r => r.Id);
        for (var i = 0; i < handouts.Count; i++)
        {
            ok[i] = rows.TryGetValue(handouts[i].Item.Id, out var r) && r.LeaseToken is not null
                && CryptographicOperations.FixedTimeEquals(r.LeaseToken, handouts[i].Item.Token);
        }
        return ok;
    }

    /// <summary>
    /// Gives back items that were taken but never handed out (reservations, or leases of callers who left). An item
    /// whose job was cancelled meanwhile is cancelled instead of made ready: the job has no lanes any more, so a ready
    /// item would never be claimed and the job's counters would never settle.
    /// </summary>
    public async Task ReleaseAsync(IReadOnlyList<TakenItem> items, CancellationToken ct)
    {
        if (items.Count == 0)
        {
            return;
        }
        var now = clock.GetUtcNow().UtcDateTime;
        await Retry.OnDeadlockAsync(async c =>
        {
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            await using var batch = new MySqlBatch(conn, tx);
            foreach (var item in items)
            {
                var cmd = new MySqlBatchCommand(item.Reservation ? ClaimSql.ReleaseReservation : ClaimSql.ReleaseLease);
                cmd.Parameters.AddWithValue("@Id", item.Id);
                cmd.Parameters.AddWithValue("@Token", item.Token);
                cmd.Parameters.AddWithValue("@Now", now);
                batch.BatchCommands.Add(cmd);
            }
            foreach (var lane in items.Select(i => (i.JobId, i.Task)).Distinct())
            {
                var cmd = new MySqlBatchCommand(ClaimSql.LowerLaneHint);
                cmd.Parameters.AddWithValue("@JobId", lane.JobId);
                cmd.Parameters.AddWithValue("@Task", lane.Task);
                cmd.Parameters.AddWithValue("@At", now);
                batch.BatchCommands.Add(cmd);
            }
            await batch.ExecuteNonQueryAsync(c);
            // A cancel that commits after this read finds these items ready and cancels them itself.
            var cancelled = await conn.QueryAsync<long>(new CommandDefinition(ClaimSql.CancelledJobsAmong,
                new { JobIds = items.Select(i => i.JobId).Distinct().ToList() }, tx, cancellationToken: c));
            foreach (var jobId in cancelled)
            {
                await Jobs.JobCancellation.CancelReadyItemsAsync(conn, tx, jobId, now, c);
            }
            await tx.CommitAsync(c);
            return true;
        }, ct);
    }

    /// <summary>Completes many leases in one transaction; each gets its own outcome. At most one completion per item, ever.</summary>
    public async Task<(FinishOutcome[] Outcomes, Dictionary<long, int> CompletionsByTenant)> CompleteAsync(IReadOnlyList<LeaseRef> leases, CancellationToken ct)
    {
        return await Retry.OnDeadlockAsync(async c =>
        {
            var now = clock.GetUtcNow().UtcDateTime;
            var outcomes = new FinishOutcome[leases.Count];
            var byTenant = new Dictionary<long, int>();
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var ids = leases.Select(l => l.ItemId).Distinct().ToList();
            var rows = (await conn.QueryAsync<FinishRow>(new CommandDefinition(ClaimSql.LockItemsForFinish, new { Ids = ids }, tx, cancellationToken: c)))
                .ToDictionary(r => r.Id);
            var done = new List<long>();
            var dry = new List<long>();
            var perJob = new Dictionary<long, int>();
            for (var i = 0; i < leases.Count; i++)
            {
                var l = leases[i];
                if (!rows.TryGetValue(l.ItemId, out var row))
                {
                    outcomes[i] = FinishOutcome.NotFound;
                }
                else if (!row.IsLiveLease(l.Token, now) || done.Contains(row.Id))
                {
                    outcomes[i] = FinishOutcome.Stale;
                }
                else
                {
                    outcomes[i] = FinishOutcome.Done;
                    done.Add(row.Id);
                    perJob[row.JobId] = perJob.GetValueOrDefault(row.JobId) + 1;
                }
            }
            if (done.Count > 0)
            {
                // One round trip for the items, every job's counters and the jobs after: a batch of completions costs
                // the same few round trips however many jobs it spans. Lanes of jobs that ran dry go after the commit
                // (LaneJanitor), so a completion never waits on a lane a rewrite holds.
                await using var batch = new MySqlBatch(conn, tx);
                foreach (var id in done)
                {
                    var cmd = new MySqlBatchCommand(ClaimSql.CompleteItem);
                    cmd.Parameters.AddWithValue("@Id", id);
                    cmd.Parameters.AddWithValue("@Now", now);
                    batch.BatchCommands.Add(cmd);
                }
                foreach (var (jobId, n) in perJob)
                {
                    var cmd = new MySqlBatchCommand(ClaimSql.CountFinished);
                    cmd.Parameters.AddWithValue("@JobId", jobId);
                    cmd.Parameters.AddWithValue("@Done", n);
                    cmd.Parameters.AddWithValue("@Dead", 0);
                    cmd.Parameters.AddWithValue("@Cancelled", 0);
                    cmd.Parameters.AddWithValue("@Now", now);
                    batch.BatchCommands.Add(cmd);
                }
                foreach (var jobId in perJob.Keys)
                {
                    var cmd = new MySqlBatchCommand(ClaimSql.JobAfterCount);
                    cmd.Parameters.AddWithValue("@JobId", jobId);
                    batch.BatchCommands.Add(cmd);
                }
                await using (var reader = await batch.ExecuteReaderAsync(c))
                {
                    var parse = reader.GetRowParser<JobTenant>();
                    do
                    {
                        while (await reader.ReadAsync(c))
                        {
                            var job = parse(reader);
                            byTenant[job.TenantId] = byTenant.GetValueOrDefault(job.TenantId) + perJob[job.Id];
                            if (job.Active <= 0)
                            {
                                dry.Add(job.Id);
                            }
                        }
                    }
                    while (await reader.NextResultAsync(c));
                }
            }
            await tx.CommitAsync(c);
            janitor.RanDry(dry);
            return (outcomes, byTenant);
        }, ct);
    }

    /// <summary>
    /// A failed attempt: retried after min(2^(attempt-1) s, 5 min) ±20%, or dead once the tenant's max_attempts is
    /// used up or the worker said retry: false. Every failure is kept in item_errors.
    /// </summary>
    public async Task<(FinishOutcome Outcome, bool Dead, long TenantId)> FailAsync(LeaseRef lease, string error, bool retry, CancellationToken ct)
    {
        return await Retry.OnDeadlockAsync(async c =>
        {
            var now = clock.GetUtcNow().UtcDateTime;
            await using var conn = await db.OpenConnectionAsync(c);
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var row = await conn.QuerySingleOrDefaultAsync<FinishRow>(new CommandDefinition(ClaimSql.LockItemForFinish, new { Id = lease.ItemId }, tx, cancellationToken: c));
            if (row is null)
            {
                return (FinishOutcome.NotFound, false, 0L);
            }
            if (!row.IsLiveLease(lease.Token, now))
            {
                return (FinishOutcome.Stale, false, 0L);
            }
            var job = await conn.QuerySingleAsync<JobStateRow>(new CommandDefinition(ClaimSql.JobStateAndTenant, new { row.JobId }, tx, cancellationToken: c));
            var max = await conn.ExecuteScalarAsync<int>(new CommandDefinition(ClaimSql.MaxAttemptsOfJob, new { row.JobId }, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(ClaimSql.RecordError, new { row.Id, Attempt = row.Attempts, Error = error, Now = now }, tx, cancellationToken: c));
            var dead = false;
            if (job.State == 3)
            {
                // The job was cancelled while this lease was out: nothing of it is handed out again.
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.CancelItem, new { row.Id, Error = error, Now = now }, tx, cancellationToken: c));
                await CountFinishedAsync(conn, tx, row.JobId, 0, 0, 1, now, c);
            }
            else if (!retry || row.Attempts >= max)
            {
                dead = true;
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.KillItem, new { row.Id, Error = error, Now = now }, tx, cancellationToken: c));
                await CountFinishedAsync(conn, tx, row.JobId, 0, 1, 0, now, c);
            }
            else
            {
                var due = now + Backoff(row.Attempts);
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.RetryItem, new { row.Id, Error = error, Due = due, Now = now }, tx, cancellationToken: c));
                await conn.ExecuteAsync(new CommandDefinition(ClaimSql.LowerLaneHint, new { row.JobId, row.Task, At = due }, tx, cancellationToken: c));
            }
            await tx.CommitAsync(c);
            return (FinishOutcome.Done, dead, job.TenantId);
        }, ct);
    }

    /// <summary>min(2^(attempt-1) s, 5 min), then ±20% uniform jitter so a burst of failures does not come back in lockstep.</summary>
    public static TimeSpan Backoff(int attempt)
    {
        var seconds = Math.Min(Math.Pow(2, Math.Max(0, attempt - 1)), 300);
        return TimeSpan.FromSeconds(seconds * (0.8 + (0.4 * Random.Shared.NextDouble())));
    }

    public async Task<(FinishOutcome Outcome, DateTime Expires)> ExtendAsync(LeaseRef lease, int seconds, string? worker, CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var expires = now.AddSeconds(seconds);
        await using var conn = await db.OpenConnectionAsync(ct);
        var changed = await conn.ExecuteAsync(new CommandDefinition(ClaimSql.ExtendLease,
            new { Id = lease.ItemId, lease.Token, Expires = expires, Worker = worker, Now = now }, cancellationToken: ct));
        if (changed > 0)
        {
            return (FinishOutcome.Done, expires);
        }
        return (await ExistsAsync(conn, lease.ItemId, ct) ? FinishOutcome.Stale : FinishOutcome.NotFound, default);
    }

    /// <summary>The document behind a live lease, or why there is none.</summary>
    public async Task<(FinishOutcome Outcome, LeaseDocument? Document)> DocumentAsync(LeaseRef lease, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var doc = await conn.QuerySingleOrDefaultAsync<LeaseDocument>(new CommandDefinition(ClaimSql.DocumentOfLease,
            new { Id = lease.ItemId, lease.Token, Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: ct));
        if (doc is not null)
        {
            return (FinishOutcome.Done, doc);
        }
        return (await ExistsAsync(conn, lease.ItemId, ct) ? FinishOutcome.Stale : FinishOutcome.NotFound, null);
    }

    /// <summary>Streams a document's bytes without holding them whole in memory.</summary>
    public async Task CopyDocumentAsync(long documentId, Stream destination, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        await using var cmd = new MySqlCommand(ClaimSql.DocumentContent, conn);
        cmd.Parameters.AddWithValue("@DocumentId", documentId);
        await using var reader = await cmd.ExecuteReaderAsync(CommandBehavior.SequentialAccess, ct);
        if (await reader.ReadAsync(ct))
        {
            await using var content = reader.GetStream(0);
            await content.CopyToAsync(destination, ct);
        }
    }

    private static async Task<bool> ExistsAsync(MySqlConnection conn, long id, CancellationToken ct) =>
        await conn.ExecuteScalarAsync<long>(new CommandDefinition(ClaimSql.ItemExists, new { Id = id }, cancellationToken: ct)) > 0;

    private static async Task CountFinishedAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, int done, int dead, int cancelled, DateTime now, CancellationToken ct)
    {
        await conn.ExecuteAsync(new CommandDefinition(ClaimSql.CountFinished,
            new { JobId = jobId, Done = done, Dead = dead, Cancelled = cancelled, Now = now }, tx, cancellationToken: ct));
        var job = await conn.QuerySingleAsync<JobAfter>(new CommandDefinition(ClaimSql.JobsAfterFinish, new { JobIds = new[] { jobId } }, tx, cancellationToken: ct));
        if (job.Active <= 0)
        {
            await conn.ExecuteAsync(new CommandDefinition(OrderingSql.RemoveJob, new { JobId = jobId }, tx, cancellationToken: ct));
        }
    }

    private sealed record LockedRow(long Id, long JobId, long DocumentId, string Task, sbyte State, int Attempts, DateTime? LeaseExpiresAt);

    private sealed record ConfirmedRow(long Id, byte[]? LeaseToken);

    private sealed record DocRow(long Id, string Name, string ContentType);

    private sealed record JobAfter(long Id, long TenantId, sbyte State, long Active);

    private sealed record JobTenant(long Id, long TenantId, long Active);

    private sealed record JobStateRow(sbyte State, long TenantId);

    private sealed record FinishRow(long Id, long JobId, string Task, sbyte State, byte[]? LeaseToken, DateTime DueAt, int Attempts, string? Worker)
    {
        /// <summary>Leased, by this token, and not expired: anything else is a stale or foreign lease.</summary>
        public bool IsLiveLease(byte[] token, DateTime now) =>
            State == 1 && LeaseToken is not null && CryptographicOperations.FixedTimeEquals(LeaseToken, token) && DueAt > now;
    }
}

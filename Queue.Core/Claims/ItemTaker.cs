using System.Globalization;
using System.Security.Cryptography;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// The walk of a claim over the ordering, inside the claim transaction (<see cref="ClaimEngine"/> owns it): rounds of
/// lanes from the <see cref="ILaneSelector"/>, the lowest claimable item ids of each lane locked with SKIP LOCKED, each
/// row written to its slot, then <see cref="ClaimClosing"/>. Locking reads come before writes, and a claim never waits
/// for a row another claimer holds.
/// </summary>
/// <remarks>
/// Round trips per round, whatever the number of lanes: the selector, the head job's lanes, then the round's other
/// lanes in one batch (only when the head did not fill every slot), the writes.
/// </remarks>
internal sealed class ItemTaker(ILaneSelector selector, ClaimCounters counters, ClaimClosing closing, HeldLanes held, LaneFloors floors)
{
    private const int LanesPerRound = 8;

    /// <summary>
    /// Rounds per claim at most. Every round marks the lanes it drained as visited, so a walk ends by itself when the
    /// lanes run out; the cap bounds the transaction when a selector keeps offering lanes with quotas (tenant-fair),
    /// at 64 rounds of 8 lanes or more: more lanes than a batch of 100 slots plus claim-ahead ever needs.
    /// </summary>
    private const int MaxRounds = 64;

    private readonly ExpiredLeaseReclaim reclaim = new(counters);

    /// <summary>Takes one item per slot (fewer if the queue runs dry), in claim order: item k of the answer gets slot k.</summary>
    /// <param name="order">Its <see cref="ClaimOrder.Waiting"/> gets the tenants of the first round's lanes, and its
    /// <see cref="ClaimOrder.FirstRound"/> is told them as soon as they are read.</param>
    /// <param name="last">The claim's last walk: its closing batch carries the COMMIT.</param>
    /// <param name="walked">Gets the items taken, before the closing batch: should the COMMIT it carries get no answer,
    /// the claim still knows what it wrote (<see cref="ClaimEngine"/>).</param>
    public async Task<List<TakenItem>> TakeAsync(ClaimTransaction tx, ClaimOrder order, DateTime now, bool last, List<TakenItem> walked, CancellationToken ct)
    {
        var (tasks, waiting) = (order.Tasks, order.Waiting);
        var walk = new Walk(order.Slots, now) { FirstRound = order.FirstRound };
        held.SkipIn(walk.Visited, now);
        for (var round = 0; round < MaxRounds && !walk.Full; round++)
        {
            if (!await RoundAsync(tx, tasks, walk, now, ct))
            {
                break;
            }
            // Written before the next round: SKIP LOCKED does not skip our own locks, so a lane visited again must
            // already show these items as taken. The last round's writes go with the closing batch instead.
            if (!walk.Full && round < MaxRounds - 1)
            {
                await tx.WriteAsync(walk.Writes, commit: false, ct);
            }
        }
        walked.AddRange(walk.Taken);
        await closing.CloseAsync(tx, walk.Writes, walk.Emptied, walk.Taken, now, last, ct);
        waiting.Clear();
        waiting.UnionWith(walk.Waiting);
        return walk.Taken;
    }

    /// <summary>One round: the selector's lanes not visited yet, their items locked, then taken lane group by lane group; false when no lane is left.</summary>
    private async Task<bool> RoundAsync(ClaimTransaction tx, IReadOnlyList<string> tasks, Walk walk, DateTime now, CancellationToken ct)
    {
        var limit = walk.Visited.Count + Math.Max(LanesPerRound, walk.Wanted);
        var first = walk.Rounds == 0;
        if (first)
        {
            walk.FirstRound?.Starts();
        }
        var lanes = await selector.SelectAsync(tx.Connection, new LaneQuery(tasks, now, limit, walk.QuotaWanted, walk.Visited), ct);
        var fresh = lanes.Where(l => !walk.Visited.Contains((l.JobId, l.Task))).ToList();
        walk.Rounds++;
        if (first)
        {
            walk.Waiting.UnionWith(lanes.Where(l => !l.Override).Select(l => l.TenantId));
            walk.FirstRound?.Saw(walk.Waiting);
        }
        if (fresh.Count == 0)
        {
            return false;
        }
        var groups = JobGroups(fresh);
        // The head job alone first: when it fills every slot (a big job), no other lane is locked for nothing.
        var wanted = walk.Wanted;
        var skipped = new HashSet<(long JobId, string Task)>();
        var locked = await LockItemsAsync(tx, groups.GetRange(0, 1), wanted, now, skipped, ct);
        var headRows = locked[0].Sum(r => r.Count);
        if (groups.Count > 1 && headRows < wanted)
        {
            locked.AddRange(await LockItemsAsync(tx, groups.GetRange(1, groups.Count - 1), wanted - headRows, now, skipped, ct));
        }
        for (var gi = 0; gi < locked.Count && !walk.Full; gi++)
        {
            await TakeGroupAsync(tx, groups[gi], locked[gi], skipped, walk, now, ct);
        }
        return true;
    }

    /// <summary>
    /// Takes the locked rows of one lane group, lowest id first. A lane that used up its quota stays unvisited, so the
    /// selector is asked again after this round (it may offer the lane again); the round itself goes on through the
    /// other lanes, so that a selector can hand out one round of quotas across many tenants per query (tenant-fair).
    /// A lane in <paramref name="skipped"/> was not read (the lanes before it had enough): it stays unvisited, and is
    /// not taken for drained.
    /// </summary>
    private async Task TakeGroupAsync(ClaimTransaction tx, List<Lane> group, List<List<LockedRow>> locked,
        HashSet<(long JobId, string Task)> skipped, Walk walk, DateTime now, CancellationToken ct)
    {
        var want = LimitOf(group[0], walk.Wanted);
        var rows = new List<LockedRow>();
        var read = new List<Lane>(group.Count);
        for (var k = 0; k < group.Count; k++)
        {
            if (skipped.Contains((group[k].JobId, group[k].Task)))
            {
                continue;
            }
            read.Add(group[k]);
            if (group[k].Quota is not { } q || locked[k].Count < q)
            {
                walk.Visited.Add((group[k].JobId, group[k].Task));
            }
            rows.AddRange(locked[k]);
        }
        if (group.Count > 1)
        {
            rows.Sort(static (a, b) => a.Id.CompareTo(b.Id));
        }
        var used = Math.Min(want, rows.Count);
        var leases = 0;
        foreach (var row in rows.Take(used))
        {
            if (await TakeRowAsync(tx.Connection, row, group[0], walk, now, ct) is { Reservation: false })
            {
                leases++;
            }
        }
        // Everything claimable the lanes showed is taken now, and each lane was asked for one row more than could be
        // taken: so they showed no more than that only when nothing else claimable is left in them. Their hint is checked
        // in the closing batch, so the next claim does not probe a lane whose items we hold. A lane that showed more
        // keeps its hint, unread: asking it for its next due time read every active entry of the lane (docs/DESIGN.md
        // "Lane hints at depth").
        if (rows.Count <= used)
        {
            walk.Emptied.AddRange(read);
        }
        // Reservations are charged when the buffer hands them out (ClaimDispatcher): a tenant's turn must not be spent
        // on items that wait in memory, or another tenant's claims would be counted against it.
        if (leases > 0)
        {
            selector.Claimed(group[0].TenantId, leases);
        }
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
    /// Locks the claimable items of every lane of <paramref name="groups"/>, lowest id first; each lane is asked for
    /// <paramref name="want"/> (its quota, if less) and one row more. No more than <paramref name="want"/> are taken; the
    /// extra row only tells whether the lane has more, stays ready and is released at the commit (other claimers skip it
    /// until then). Lanes without a floor go first in one range read for all (<see cref="ClaimSql.LockLanesItemsAtOnce"/>);
    /// the rest, and the lanes that read may have cut short, in one statement of a part per lane
    /// (<see cref="ClaimSql.LockLanesItems"/>). A lane cut short is asked again only while the lanes before it (in the
    /// order given) showed fewer than <paramref name="want"/> rows; the rest go to <paramref name="skipped"/>, unread.
    /// Asked again all at once, a flood of 10-item jobs had 590 rows locked for a claim of 50 (59 lanes of 51).
    /// </summary>
    private async Task<List<List<List<LockedRow>>>> LockItemsAsync(ClaimTransaction tx, List<List<Lane>> groups, int want, DateTime now,
        HashSet<(long JobId, string Task)> skipped, CancellationToken ct)
    {
        var lanes = groups.SelectMany(g => g).ToList();
        var perLane = lanes.Select(_ => new List<LockedRow>()).ToList();
        var limits = lanes.Select(l => LimitOf(l, want)).ToList();
        var floorOf = lanes.Select(l => floors.Of(l.JobId, l.Task, now)).ToList();
        var atOnce = Enumerable.Range(0, lanes.Count).Where(k => floorOf[k] == 0).ToList();
        var each = Enumerable.Range(0, lanes.Count).Where(k => floorOf[k] > 0).ToList();
        if (atOnce.Count >= AtOnceFrom)
        {
            var cut = new Dictionary<int, int>();
            foreach (var chunk in atOnce.Chunk(AtOnceMax))
            {
                await LockAtOnceAsync(tx, chunk, lanes, limits, perLane, cut, now, ct);
            }
            var shown = 0;
            for (var k = 0; k < lanes.Count; k++)
            {
                if (cut.TryGetValue(k, out var rows))
                {
                    if (shown >= want)
                    {
                        skipped.Add((lanes[k].JobId, lanes[k].Task));
                        continue;
                    }
                    each.Add(k);
                    shown += Math.Min(rows, limits[k]);
                }
                else if (floorOf[k] == 0)
                {
                    shown += Math.Min(perLane[k].Count, limits[k]);
                }
            }
        }
        else
        {
            each.AddRange(atOnce);
        }
        if (each.Count > 0)
        {
            each.Sort();
            await LockEachAsync(tx, each, lanes, limits, floorOf, perLane, now, ct);
        }
        var result = new List<List<List<LockedRow>>>(groups.Count);
        var next = 0;
        foreach (var group in groups)
        {
            result.Add(perLane.GetRange(next, group.Count));
            next += group.Count;
        }
        return result;
    }

    /// <summary>Lanes from this many on are read at once: for one lane, the part of its own costs the same.</summary>
    private const int AtOnceFrom = 2;

    /// <summary>Lanes per read at once: the cap of its rows, and so what a lane cut short may have missed, grows with it.</summary>
    private const int AtOnceMax = 256;

    /// <summary>
    /// One read for the lanes <paramref name="chunk"/> (indexes into <paramref name="lanes"/>), capped at two rows per
    /// lane and one more. Below the cap every lane showed all its claimable items, and keeps the lowest ids it asked for.
    /// At the cap, the range read (in index order: job id, then task) went past every lane before the last row's, so
    /// those showed all theirs too; the last row's lane and those after it may have been cut short unless they showed
    /// what they asked for. Those go to <paramref name="cut"/> with the rows they showed, to be asked again one part
    /// each (their rows here are locked by this transaction, which sees them again).
    /// </summary>
    private static async Task LockAtOnceAsync(ClaimTransaction tx, int[] chunk, List<Lane> lanes, List<int> limits,
        List<List<LockedRow>> perLane, Dictionary<int, int> cut, DateTime now, CancellationToken ct)
    {
        var cap = (2 * chunk.Length) + 1;
        var rows = chunk.ToDictionary(k => (lanes[k].JobId, lanes[k].Task), _ => new List<LockedRow>());
        var read = 0;
        (long JobId, string Task) last = default;
        var chunkLanes = chunk.Select(k => (lanes[k].JobId, lanes[k].Task)).ToList();
        await using (var cmd = new MySqlCommand(ClaimSql.LockLanesItemsAtOnce(chunkLanes.ConvertAll(l => l.Task)), tx.Connection))
        {
            LaneCommand.AddLanes(cmd.Parameters, chunkLanes);
            cmd.Parameters.AddWithValue("@Cap", cap);
            cmd.Parameters.AddWithValue("@Now", now);
            await using var reader = await tx.ReadAsync(cmd, ct);
            var parse = reader.GetRowParser<LockedRow>();
            while (await reader.ReadAsync(ct))
            {
                var row = parse(reader);
                read++;
                // The read matches each lane's exact pair, and task names are lower case by validation.
                rows[(row.JobId, row.Task)].Add(row);
                last = (row.JobId, row.Task);
            }
        }
        foreach (var k in chunk)
        {
            var shown = rows[(lanes[k].JobId, lanes[k].Task)];
            var asked = limits[k] + 1;
            if (read >= cap && shown.Count < asked && !IndexOrderBefore((lanes[k].JobId, lanes[k].Task), last))
            {
                cut[k] = shown.Count;
                continue;
            }
            shown.Sort(static (a, b) => a.Id.CompareTo(b.Id));
            perLane[k].AddRange(shown.Take(asked));
        }
    }

    /// <summary>
    /// Whether lane <paramref name="a"/> comes before lane <paramref name="b"/> in <c>ix_items_claim</c>: by job id,
    /// then task in the column's ascii_general_ci order (case folded to upper, so '_' sorts after the letters).
    /// </summary>
    private static bool IndexOrderBefore((long JobId, string Task) a, (long JobId, string Task) b) =>
        a.JobId != b.JobId ? a.JobId < b.JobId
            : string.CompareOrdinal(a.Task.ToUpperInvariant(), b.Task.ToUpperInvariant()) < 0;

    /// <summary>The lanes <paramref name="each"/> (indexes into <paramref name="lanes"/>, ascending) in one statement of a part per lane.</summary>
    private async Task LockEachAsync(ClaimTransaction tx, List<int> each, List<Lane> lanes, List<int> limits, List<long> floorOf,
        List<List<LockedRow>> perLane, DateTime now, CancellationToken ct)
    {
        await using (var cmd = new MySqlCommand(ClaimSql.LockLanesItems(each.Select(k => floorOf[k] > 0).ToList()), tx.Connection))
        {
            LaneCommand.AddLanes(cmd.Parameters, each.Select(k => (lanes[k].JobId, lanes[k].Task)).ToList());
            cmd.Parameters.AddNumbered("@l", each.Select(k => limits[k] + 1));
            for (var p = 0; p < each.Count; p++)
            {
                // Only the parts that start from a floor name their @f parameter.
                if (floorOf[each[p]] > 0)
                {
                    cmd.Parameters.AddWithValue(SqlRows.Parameter("@f", p), floorOf[each[p]]);
                }
            }
            cmd.Parameters.AddWithValue("@Now", now);
            await using var reader = await tx.ReadAsync(cmd, ct);
            var parse = reader.GetRowParser<LockedRow>(startIndex: 1);
            while (await reader.ReadAsync(ct))
            {
                perLane[each[Convert.ToInt32(reader.GetValue(0), CultureInfo.InvariantCulture)]].Add(parse(reader));
            }
        }
        // A lane that ran short above its floor may hold claimable items below it: rows that concurrent claimers had
        // locked and then left, when another claim's floor passed them. The next claim walks it whole.
        foreach (var k in each)
        {
            if (floorOf[k] > 0 && perLane[k].Count <= limits[k])
            {
                floors.Drop(lanes[k].JobId, lanes[k].Task);
            }
        }
    }

    /// <summary>
    /// Queues the write that gives <paramref name="row"/> to the walk's next slot, and returns that slot; null when the
    /// row is instead an expired lease that used up its attempts (<see cref="ExpiredLeaseReclaim"/>: it goes dead and takes no slot).
    /// </summary>
    private async Task<ClaimSlot?> TakeRowAsync(MySqlConnection conn, LockedRow row, Lane lane, Walk walk, DateTime now,
        CancellationToken ct)
    {
        var expired = row.State == ItemStates.Leased && row.LeaseExpiresAt is not null;
        if (expired && !await reclaim.ReclaimAsync(conn, row.Id, row.JobId, row.Attempts, now, ct))
        {
            return null;
        }
        var slot = walk.NextSlot;
        var token = RandomNumberGenerator.GetBytes(16);
        if (slot.Reservation)
        {
            walk.Writes.Reserve(row.Id, token, slot.Until, expired);
        }
        else
        {
            walk.Writes.Lease(row.Id, token, slot.Until, slot.Worker, expired);
        }
        // A reservation does not count as an attempt until it is handed out.
        var attempt = slot.Reservation ? row.Attempts : row.Attempts + 1;
        walk.Taken.Add(new TakenItem(row.Id, row.JobId, lane.TenantId, row.DocumentId, row.Task, attempt, token, slot.Until, slot.Reservation)
        {
            Value = lane.Value,
            Override = lane.Override,
        });
        return slot;
    }

    private sealed record LockedRow(long Id, long JobId, long DocumentId, string Task, sbyte State, int Attempts, DateTime? LeaseExpiresAt);

    /// <summary>One claim's progress: the slots, what they got so far, the writes not sent yet, the lanes seen and drained.</summary>
    private sealed class Walk(IReadOnlyList<ClaimSlot> slots, DateTime now)
    {
        public List<TakenItem> Taken { get; } = new(slots.Count);

        public ClaimWrites Writes { get; } = new(now);

        public HashSet<(long JobId, string Task)> Visited { get; } = [];

        public List<Lane> Emptied { get; } = [];

        /// <summary>The tenants of the first round's lanes (see <see cref="ClaimOrder.Waiting"/>).</summary>
        public HashSet<long> Waiting { get; } = [];

        public FirstRoundWatch? FirstRound { get; init; }

        public int Rounds { get; set; }

        public int Wanted => slots.Count - Taken.Count;

        /// <summary>
        /// What a fair selector shares out in the next round: the workers' leases still to fill, so that the callers of
        /// one transaction get the tenants' turns as single claims would; then everything the claim-ahead reservations
        /// still want (the buffer hands those out by turn anyway). Each in one round: shared out one turn per round,
        /// 8 callers and two tenants with work took 8 rounds of five round trips.
        /// </summary>
        public int QuotaWanted => Taken.Count < leaseSlots ? leaseSlots - Taken.Count : Wanted;

        private readonly int leaseSlots = slots.Count(s => !s.Reservation);

        public bool Full => Taken.Count >= slots.Count;

        public ClaimSlot NextSlot => slots[Taken.Count];
    }
}

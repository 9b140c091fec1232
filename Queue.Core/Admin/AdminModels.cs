using System.Globalization;
using Queue.Core.Jobs;

namespace Queue.Core.Admin;

/// <summary>A job as technicians see it, from its counters (never from an item scan).</summary>
public sealed class AdminJob
{
    public long Id { get; init; }

    public string Name { get; init; } = "";

    public long TenantId { get; init; }

    public string TenantName { get; init; } = "";

    public int State { get; init; }

    public bool Blocked { get; init; }

    public string Tasks { get; init; } = "";

    public long Documents { get; init; }

    public long ItemsTotal { get; init; }

    public long ItemsDone { get; init; }

    public long ItemsDead { get; init; }

    public long ItemsCancelled { get; init; }

    public DateTime CreatedAt { get; init; }

    public DateTime? ClosedAt { get; init; }

    public DateTime? FinishedAt { get; init; }

    /// <summary>Items not yet done, dead or cancelled: ready plus leased.</summary>
    public long Active => ItemsTotal - ItemsDone - ItemsDead - ItemsCancelled;

    public string StateName => JobStates.Name(State);

    public bool IsFinished => State is JobStates.Done or JobStates.Cancelled;
}

public sealed class OverrideInfo
{
    public long Id { get; init; }

    public long JobId { get; init; }

    public long Priority { get; init; }

    public string Reason { get; init; } = "";

    public DateTime ExpiresAt { get; init; }

    public DateTime CreatedAt { get; init; }

    public string SetBy { get; init; } = "";

    public bool Active { get; init; } = true;

    public DateTime? UpdatedAt { get; init; }
}

/// <summary>One row of the queue view: a job and the reason it sits where it does.</summary>
public sealed record QueueEntry(
    int? Position,
    AdminJob Job,
    long Value,
    string Mode,
    bool Blocked,
    bool ClaimableNow,
    DateTime AvailableAt,
    string Tasks,
    OverrideInfo? Override);

/// <summary>A keyset position in the queue view: the last row shown, and the position it had.</summary>
public sealed record QueueCursor(bool Blocked, long Value, long JobId, int Position)
{
    public static readonly QueueCursor Start = new(false, long.MinValue, long.MinValue, 0);

    public override string ToString() => string.Create(CultureInfo.InvariantCulture, $"{(Blocked ? 1 : 0)}:{Value}:{JobId}:{Position}");

    public static QueueCursor? Parse(string? text)
    {
        if (string.IsNullOrEmpty(text))
        {
            return Start;
        }
        var parts = text.Split(':');
        if (parts.Length != 4
            || parts[0] is not ("0" or "1")
            || !long.TryParse(parts[1], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var value)
            || !long.TryParse(parts[2], NumberStyles.None, CultureInfo.InvariantCulture, out var jobId)
            || !int.TryParse(parts[3], NumberStyles.None, CultureInfo.InvariantCulture, out var position))
        {
            return null;
        }
        return new QueueCursor(parts[0] == "1", value, jobId, position);
    }
}

public sealed record QueueFilter(string? Task = null, long? TenantId = null);

public sealed record QueuePage(IReadOnlyList<QueueEntry> Entries, QueueCursor? Next, long? LowestValue);

public sealed class LaneInfo
{
    public string Task { get; init; } = "";

    /// <summary>The value as stored, band included: what positions compare.</summary>
    public long Stored { get; init; }

    /// <summary>The value as shown (<see cref="Ordering.OrderingBand"/>).</summary>
    public long Value => Ordering.OrderingBand.Shown(Stored);

    public string Mode { get; init; } = "";

    public bool Blocked { get; init; }

    public DateTime AvailableAt { get; init; }

    public DateTime UpdatedAt { get; init; }
}

public sealed class DeadItem
{
    public long Id { get; init; }

    public long DocumentId { get; init; }

    public string Task { get; init; } = "";

    public int Attempts { get; init; }

    public string? LastError { get; init; }

    public DateTime UpdatedAt { get; init; }

    public IReadOnlyList<ItemError> Errors { get; set; } = [];
}

public sealed class ItemError
{
    public long ItemId { get; init; }

    public int Attempt { get; init; }

    public string Error { get; init; } = "";

    public DateTime At { get; init; }
}

/// <param name="Position">1-based; when <paramref name="PositionIsLowerBound"/> it is an estimate of a job more than
/// <see cref="Ordering.QueuePosition.ExactLimit"/> deep (an index dive, not a count).</param>
public sealed record JobDetail(
    AdminJob Job,
    long LiveLeases,
    int? Position,
    bool PositionIsLowerBound,
    IReadOnlyList<LaneInfo> Lanes,
    OverrideInfo? Override,
    IReadOnlyList<OverrideInfo> OverrideHistory,
    IReadOnlyList<DeadItem> DeadItems,
    long? NextDeadAfter,
    IReadOnlyList<AuditEntry> Audit)
{
    /// <summary>Ready as docs/CONTRACT.md counts it: active minus live leases (an expired lease is ready).</summary>
    public long Ready => Job.Active - LiveLeases;
}

public sealed class AuditEntry
{
    public long Id { get; init; }

    public DateTime At { get; init; }

    public string Actor { get; init; } = "";

    public string Action { get; init; } = "";

    public long? JobId { get; init; }

    public long? TenantId { get; init; }

    public string? TenantName { get; init; }

    public string? Reason { get; init; }

    public string? BeforeJson { get; init; }

    public string? AfterJson { get; init; }
}

public sealed record AuditPage(IReadOnlyList<AuditEntry> Entries, long? NextBefore);

public sealed class TenantDepth
{
    public long TenantId { get; init; }

    public string TenantName { get; set; } = "";

    public long UnfinishedJobs { get; init; }

    public long JobsWithWork { get; init; }

    public long Active { get; init; }

    public long Done { get; init; }

    public long Dead { get; init; }

    public long Cancelled { get; init; }

    public long Leased { get; set; }

    public long Ready => Active - Leased;
}

public sealed class ThroughputPoint
{
    public DateTime At { get; init; }

    public long Claims { get; init; }

    public long Completions { get; init; }
}

public sealed class RewriteInfo
{
    public DateTime PeriodStart { get; init; }

    public string Mode { get; init; } = "";

    public long JobsRanked { get; init; }

    public long DurationMs { get; init; }

    public DateTime FinishedAt { get; init; }

    public string Instance { get; init; } = "";
}

/// <summary>A worker: the leases it holds now (from items) and what the claim path records about it (workers table).</summary>
public sealed class LeaseHolder
{
    /// <summary>The name the worker gave in <c>/next</c>; empty when it gave none.</summary>
    public string Worker { get; init; } = "";

    public long Live { get; init; }

    public long Expired { get; init; }

    public long Jobs { get; init; }

    /// <summary>Claim time of the oldest lease it holds; null when it holds none.</summary>
    public DateTime? Since { get; init; }

    /// <summary>Its latest claim, extension or report, whichever source saw it last.</summary>
    public DateTime? LastSeen { get; init; }

    public DateTime? NextExpiry { get; init; }

    public DateTime? FirstSeen { get; init; }

    public long Claims { get; init; }

    public long Completions { get; init; }

    public long Failures { get; init; }

    /// <summary>Holds a live lease, or was seen within <paramref name="window"/>.</summary>
    public bool IsActive(DateTime now, TimeSpan window) => Live > 0 || (LastSeen is { } seen && seen >= now - window);
}

public sealed record Dashboard(
    DateTimeOffset Now,
    string Mode,
    DateTimeOffset PeriodStart,
    DateTimeOffset NextRewrite,
    string NextMode,
    RewriteInfo? LastRewrite,
    IReadOnlyList<TenantDepth> Depth,
    IReadOnlyList<ThroughputPoint> Throughput,
    AdminJob? OldestWaiting,
    long QueuedJobs,
    IReadOnlyList<LeaseHolder> Workers);

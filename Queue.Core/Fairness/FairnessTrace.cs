namespace Queue.Core.Fairness;

public enum TraceKind
{
    /// <summary>Count items of the job became ready for the first time (a job created or documents uploaded).</summary>
    Submitted,

    /// <summary>Count items of the job were claimed, one claim decision each, in order.</summary>
    Claimed,

    /// <summary>Count items of the job were completed (or went dead): finished for good.</summary>
    Completed,

    /// <summary>Count items of the job became ready again (a failure retried, a lease given back or expired).</summary>
    Released,

    /// <summary>An observation: the job has exactly Count ready items now. Production samples use it; claims after it count down.</summary>
    ReadySample,
}

/// <summary>One fact of a claim trace. Events are applied in list order; equal times are fine.</summary>
public readonly record struct TraceEvent(DateTime At, TraceKind Kind, long Tenant, long Job, int Count);

/// <summary>
/// What a job would take with the whole worker pool to itself: <c>ceil(items / Workers) * ItemTime</c>. Stretch divides
/// a job's turnaround by this.
/// </summary>
public sealed record ServiceModel(int Workers, TimeSpan ItemTime)
{
    public TimeSpan ServiceTime(long items) =>
        TimeSpan.FromTicks(Math.Max(1, (items + Math.Max(1, Workers) - 1) / Math.Max(1, Workers)) * ItemTime.Ticks);
}

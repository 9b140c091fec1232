using Queue.Core.Hosting;

namespace Queue.Core.Jobs;

/// <summary>Section <c>Jobs</c>: submissions and uploads.</summary>
public sealed class JobOptions
{
    /// <summary>Documents larger than the probe streamed to the database at once. MySqlConnector sends a Stream value of a
    /// prepared statement with COM_STMT_SEND_LONG_DATA through a pooled 16 MB buffer, so this caps that memory.</summary>
    public int MaxConcurrentStreams { get; set; } = 8;

    /// <summary>Inline documents per POST /jobs.</summary>
    public int MaxInlineDocuments { get; set; } = 10_000;

    /// <summary>Concurrent POST /jobs grouped into one transaction at most (docs/DESIGN.md "Grouped submissions").</summary>
    public int SubmissionBatch { get; set; } = 64;

    /// <summary>Inline bytes (base64 and metadata) one grouped transaction carries at most; a larger single job goes alone.</summary>
    public long SubmissionBatchBytes { get; set; } = 8L * 1024 * 1024;

    /// <summary>POST /jobs waiting for a grouped transaction, beyond which new ones get 503 at once.</summary>
    public int MaxPendingSubmissions { get; set; } = 1024;

    /// <summary>Grouped submission transactions in flight at once: two keep the database busy while one commits.</summary>
    public int MaxConcurrentSubmissionFlushes { get; set; } = 2;

    /// <summary>How long a POST /jobs waits for its grouped transaction before it answers 503 with Retry-After.</summary>
    public int DatabaseWaitMilliseconds { get; set; } = 10_000;

    /// <summary>
    /// An upload whose documents together are at most this many bytes is read whole before its transaction and grouped
    /// with the other small uploads of the moment (docs/DESIGN.md "Grouped submissions"); a larger one streams into a
    /// transaction of its own. At most <see cref="JobService.ProbeBytes"/>.
    /// </summary>
    public int GroupedUploadBytes { get; set; } = 64 * 1024;

    /// <summary>
    /// Where uploads too large to group are spooled before their transaction (deleted on close); empty means
    /// <c>queue-uploads</c> under the system's temporary directory. Each upload is bounded by the request limit (64 MiB).
    /// </summary>
    public string SpoolDirectory { get; set; } = "";

    /// <summary>
    /// Bytes all uploads of this process may have spooled at once (<see cref="SpoolBudget"/>); an upload that would
    /// pass it is answered 503 with Retry-After, and nothing of it is kept. 2 GiB: 32 uploads at the request limit.
    /// </summary>
    public long MaxSpoolBytes { get; set; } = 2L * 1024 * 1024 * 1024;

    internal Data.GroupLimits GroupLimits =>
        new(MaxPendingSubmissions, MaxConcurrentSubmissionFlushes, SubmissionBatch, SubmissionBatchBytes, DatabaseWaitMilliseconds);
}

/// <summary>Creating jobs, adding documents (streamed), closing and cancelling. Every call checks the tenant.</summary>

public sealed class JobOptionsRules() : OptionsRules<JobOptions>("Jobs")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(JobOptions o) =>
    [
        (nameof(o.MaxConcurrentStreams), o.MaxConcurrentStreams is >= 1 and <= 256, "must be 1 to 256"),
        (nameof(o.MaxInlineDocuments), o.MaxInlineDocuments is >= 1 and <= 1_000_000, "must be 1 to 1000000"),
        (nameof(o.SubmissionBatch), o.SubmissionBatch is >= 1 and <= 1000, "must be 1 to 1000"),
        (nameof(o.SubmissionBatchBytes), o.SubmissionBatchBytes >= 1024, "must be at least 1024"),
        (nameof(o.MaxPendingSubmissions), o.MaxPendingSubmissions >= 1, "must be at least 1"),
        (nameof(o.MaxConcurrentSubmissionFlushes), o.MaxConcurrentSubmissionFlushes is >= 1 and <= 16, "must be 1 to 16"),
        (nameof(o.DatabaseWaitMilliseconds), o.DatabaseWaitMilliseconds > 0, "must be positive"),
        (nameof(o.MaxSpoolBytes), o.MaxSpoolBytes >= 1024 * 1024, "must be at least 1048576"),
        (nameof(o.GroupedUploadBytes), o.GroupedUploadBytes is >= 0 and <= JobService.ProbeBytes, $"must be 0 to {JobService.ProbeBytes}"),
    ];
}

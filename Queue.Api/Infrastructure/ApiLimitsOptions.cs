using Queue.Core.Hosting;

namespace Queue.Api.Infrastructure;

/// <summary>Section <c>Limits</c>: request sizes and concurrency of the Api.</summary>
public sealed class ApiLimitsOptions
{
    /// <summary>Largest request body, in bytes (docs/CONTRACT.md: 64 MiB).</summary>
    public long MaxRequestBytes { get; set; } = 64L * 1024 * 1024;

    /// <summary>Largest single document, in bytes (docs/CONTRACT.md: 16 MiB).</summary>
    public long MaxDocumentBytes { get; set; } = 16L * 1024 * 1024;

    /// <summary>Requests in flight before new ones get 503 at once instead of queueing behind a slow database.</summary>
    public int MaxConcurrentRequests { get; set; } = 1024;

    /// <summary>POST /next calls in flight (long-polls included) before new ones get 503. Counted apart from
    /// <see cref="MaxConcurrentRequests"/>, so idle pollers can never take the capacity complete and extend need.</summary>
    public int MaxConcurrentPolls { get; set; } = 1024;

    /// <summary>
    /// How long a request may wait on the database before it answers 503 with Retry-After (a long-poll gets its wait on
    /// top). Streamed bodies (job creation, uploads, downloads) are bounded by the minimum data rate instead.
    /// </summary>
    public int RequestTimeoutSeconds { get; set; } = 10;
}

public sealed class ApiLimitsOptionsRules() : OptionsRules<ApiLimitsOptions>("Limits")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(ApiLimitsOptions o) =>
    [
        (nameof(o.MaxRequestBytes), o.MaxRequestBytes > 0, "must be positive"),
        (nameof(o.MaxDocumentBytes), o.MaxDocumentBytes > 0 && o.MaxDocumentBytes <= o.MaxRequestBytes, "must be positive and at most MaxRequestBytes"),
        (nameof(o.MaxConcurrentRequests), o.MaxConcurrentRequests > 0, "must be positive"),
        (nameof(o.MaxConcurrentPolls), o.MaxConcurrentPolls > 0, "must be positive"),
        (nameof(o.RequestTimeoutSeconds), o.RequestTimeoutSeconds is >= 1 and <= 300, "must be 1 to 300"),
    ];
}

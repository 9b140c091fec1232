namespace Queue.Client;

// The contract's shapes (docs/CONTRACT.md). Responses are read leniently (unknown fields are ignored) so that a client
// keeps working when the service adds fields, as the contract allows.

public sealed record ItemCounts(long Total, long Ready, long Leased, long Done, long Dead, long Cancelled);

public sealed record OrderingInfo(string Mode, long? Value, bool Override);

public sealed record JobStatus(
    long Id, string Name, string State, DateTimeOffset CreatedAt, IReadOnlyList<string> Tasks, int Documents, ItemCounts Items,
    long? Position, bool PositionExact, OrderingInfo? Ordering, DateTimeOffset? Eta)
{
    /// <summary>done or cancelled: nothing more will happen to the job.</summary>
    public bool IsFinished => State is "done" or "cancelled";
}

public sealed record CreatedDocument(long Id, string Name, long Size, string Sha256);

/// <summary>POST /jobs answers the status plus the documents it stored.</summary>
public sealed record CreatedJob(
    long Id, string Name, string State, DateTimeOffset CreatedAt, IReadOnlyList<string> Tasks, int Documents, ItemCounts Items,
    long? Position, bool PositionExact, OrderingInfo? Ordering, DateTimeOffset? Eta, IReadOnlyList<CreatedDocument> Created);

public sealed record UploadResult(IReadOnlyList<CreatedDocument> Documents, long ItemsAdded);

public sealed record JobsPage(IReadOnlyList<JobStatus> Jobs, string? Next);

public sealed record DocumentInfo(long Id, string Name, string ContentType, long Size, string Sha256, DateTimeOffset CreatedAt);

public sealed record DocumentsPage(IReadOnlyList<DocumentInfo> Documents, string? Next);

public sealed record ItemInfo(long Id, long DocumentId, string Task, string State, int Attempts, string? LastError, DateTimeOffset UpdatedAt);

public sealed record ItemsPage(IReadOnlyList<ItemInfo> Items, string? Next);

public sealed record AheadReasons(long Smaller, long Older, long Override, long AnotherTenantsTurn);

public sealed record EtaRange(DateTimeOffset Earliest, DateTimeOffset Latest, double ItemsPerSecond);

public sealed record NextRewrite(DateTimeOffset At, string Mode);

/// <summary>GET /jobs/{id}/explain: why the job is where it is.</summary>
public sealed record JobExplanation(
    long JobId, long? Position, bool PositionExact, string Policy, string Mode, long? Value, bool Override, DateTimeOffset? OverrideUntil,
    bool Blocked, long JobsAhead, AheadReasons Ahead, NextRewrite NextRewrite, EtaRange? Eta, string Summary);

/// <summary>An item handed out by POST /next, under a lease.</summary>
public sealed record LeasedItem(long Id, string LeaseToken, DateTimeOffset LeaseExpiresAt, long JobId, string Tenant, long DocumentId,
    string DocumentName, string ContentType, string Task, int Attempt);

/// <summary>One inline document of POST /jobs.</summary>
public sealed record InlineDocument(string Name, string ContentType, byte[] Content);

/// <summary>POST /jobs. <c>Tasks</c> null takes the tenant's defaults; <c>Open</c> keeps the job open for uploads.</summary>
public sealed record NewJob(string Name, IReadOnlyList<string>? Tasks = null, bool Open = false, IReadOnlyList<InlineDocument>? Documents = null);

internal sealed record CreateJobBody(string Name, IReadOnlyList<string>? Tasks, bool Open, IReadOnlyList<InlineDocumentBody>? Documents);

internal sealed record InlineDocumentBody(string Name, string ContentType, string Content);

/// <summary><c>RequestId</c> is the same on every retry of one claim, so a retry after a lost 200 gets the same leases back.</summary>
internal sealed record NextBody(string? Worker, IReadOnlyList<string>? Tasks, int Max, int Wait, int Lease, string RequestId);

internal sealed record NextAnswer(IReadOnlyList<LeasedItem> Items);

/// <summary><c>Next</c> (CONTRACT v1.3) claims in the same exchange; left out when null.</summary>
internal sealed record LeaseBody(string LeaseToken, NextBody? Next = null);

internal sealed record FailBody(string LeaseToken, string Error, bool Retry, NextBody? Next = null);

internal sealed record ExtendBody(string LeaseToken, int Lease);

internal sealed record ExtendAnswer(DateTimeOffset LeaseExpiresAt);

internal sealed record ProblemBody(string? Type, string? Title, int? Status, string? Detail, Dictionary<string, string[]>? Errors);

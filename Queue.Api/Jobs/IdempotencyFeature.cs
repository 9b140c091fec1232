using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>
/// What a keyed request's handler and <see cref="IdempotencyFilter"/> tell each other, set in the request's features
/// by the filter (absent without an Idempotency-Key): per request, so no handler reaches the filter through a static.
/// </summary>
public interface IIdempotencyFeature
{
    /// <summary>The key's record a keyed write runs under (<see cref="PendingJob.Key"/>).</summary>
    IdempotencyRun Run { get; }

    /// <summary>
    /// The job an earlier request with this key made and never answered for (<see cref="IdempotencyVerdict.Landed"/>):
    /// the handler answers with it instead of making another; its answer is then stored for later retries.
    /// </summary>
    long? LandedJob { get; }

    /// <summary>The same for an upload: the first document it stored and how many.</summary>
    (long First, int Count)? LandedDocuments { get; }

    /// <summary>
    /// Called by a handler the moment its work has committed, with the answer a retry must get should anything fail
    /// before the real answer is ready. From here on the key is never freed.
    /// </summary>
    void Committed(int statusCode, string location, object body);

    /// <summary>
    /// Called by a handler whose write was still running when it had to answer (<see cref="Queue.Core.Data.WriteStillRunningException"/>):
    /// the key stays taken, so a retry gets 409, until <paramref name="answer"/> completes with the answer a retry must
    /// get (stored, then replayed), or null or an error when nothing landed (the key is freed).
    /// </summary>
    void Landing(Task<CommittedAnswer?> answer);
}

/// <summary>What a retry with the key must get once the work committed.</summary>
public sealed record CommittedAnswer(int StatusCode, string? Location, object Body);

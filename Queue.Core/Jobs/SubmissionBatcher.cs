using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Queue.Core.Data;
using Queue.Core.Hosting;

namespace Queue.Core.Jobs;

/// <summary>
/// Groups concurrent job creations of this process into one transaction (one commit, three round trips for the whole
/// group), as claims and completions are grouped; see <see cref="GroupedWrites{TIn, TOut}"/> for how each caller keeps
/// its own outcome. See docs/DESIGN.md "Grouped submissions".
/// </summary>
public sealed partial class SubmissionBatcher
{
    private readonly GroupedWrites<PendingJob, CreatedJob> writes;

    public SubmissionBatcher(JobCreator creator, IOptions<JobOptions> options, BackgroundWork host, ILogger<SubmissionBatcher> logger) =>
        writes = new(host, creator.CreateAsync, j => j.Bytes, options.Value.GroupLimits, "submissions", (ex, n) => LogGroupFailed(logger, ex, n));

    public Task<CreatedJob> CreateAsync(PendingJob job, CancellationToken ct) => writes.RunAsync(job, ct);

    [LoggerMessage(EventId = 2001, Level = LogLevel.Warning, Message = "A grouped submission of {Count} jobs failed; creating them one by one")]
    private static partial void LogGroupFailed(ILogger logger, Exception exception, int count);
}

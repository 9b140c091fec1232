using Microsoft.Extensions.DependencyInjection;

namespace Queue.Core.Jobs;

public static class JobServices
{
    /// <summary>Job submission and status services (docs/DESIGN.md "Submission"), shared by the Api and the Admin UI.</summary>
    public static IServiceCollection AddJobs(this IServiceCollection services)
    {
        services.AddOptions<JobOptions>().BindConfiguration("Jobs")
            .Validate(o => o.IsValid(), "Jobs: MaxConcurrentStreams must be 1 to 256, MaxInlineDocuments 1 to 1000000, SubmissionBatch 1 to 1000, SubmissionBatchBytes at least 1024, MaxConcurrentSubmissionFlushes 1 to 16, MaxPendingSubmissions and DatabaseWaitMilliseconds positive")
            .ValidateOnStart();
        services.AddSingleton<TenantCache>();
        services.AddSingleton<ThroughputMeter>();
        services.AddSingleton<JobStatusService>();
        services.AddSingleton<JobQueries>();
        services.AddSingleton<JobCreator>();
        services.AddSingleton<SubmissionBatcher>();
        services.AddSingleton<UploadBatcher>();
        services.AddSingleton<JobService>();
        services.AddSingleton<IdempotencyStore>();
        return services;
    }
}

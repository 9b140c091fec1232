using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Queue.Core.Hosting;

namespace Queue.Core.Jobs;

public static class JobServices
{
    /// <summary>Job submission and status services (docs/DESIGN.md "Submission"), shared by the Api and the Admin UI.</summary>
    public static IServiceCollection AddJobs(this IServiceCollection services)
    {
        services.AddCheckedOptions<JobOptions, JobOptionsRules>();
        services.AddSingleton<TenantCache>();
        services.AddSingleton<OpenJobCache>();
        services.AddSingleton<ThroughputMeter>();
        services.AddSingleton<JobStatusService>();
        services.AddSingleton<JobQueries>();
        services.TryAddSingleton<INewWorkIntake, NoNewWorkIntake>();
        services.AddSingleton<JobCreator>();
        services.AddSingleton<SubmissionBatcher>();
        services.AddSingleton<UploadBatcher>();
        services.AddSingleton<SpoolBudget>();
        services.AddSingleton<LargeUploads>();
        services.AddSingleton<JobService>();
        services.AddSingleton<IdempotencyStore>();
        return services;
    }
}

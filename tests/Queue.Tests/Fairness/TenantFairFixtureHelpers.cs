using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>The override helper of <see cref="TenantFairFixture"/>, for any work fixture.</summary>
internal sealed class TenantFairFixtureHelpers(WorkFixture fx)
{
    public Task OverrideAsync(long jobId, long priority) => TenantFairFixture.OverrideAsync(fx, jobId, priority);
}

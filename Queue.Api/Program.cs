using Prometheus;
using Queue.Api;
using Queue.Api.Fairness;
using Queue.Api.Infrastructure;
using Queue.Api.Jobs;
using Queue.Api.Work;
using Queue.Core.Telemetry;

var builder = WebApplication.CreateSlimBuilder(args);
builder.AddQueueApi();
builder.Services.AddJobsApi();
builder.Services.AddWorkerApi();
builder.Services.AddFairnessApi();
builder.AddQueueTelemetry("queue-api");

var app = builder.Build();
app.UseApiProblems();
// The duration histogram only: its _count is the request count, and the in-progress gauge and the counter were two
// more middlewares on every request (docs/DESIGN.md "Peer speed").
app.UseHttpMetrics(o =>
{
    o.InProgress.Enabled = false;
    o.RequestCount.Enabled = false;
});
app.UseAuthentication();
app.UseAuthorization();
app.UseRateLimiter();
app.UseRequestTimeouts();
app.MapOpenApi("/openapi/v1.json").AllowAnonymous();
app.MapOpsApi();
app.MapJobsApi();
app.MapWorkerApi();
app.MapFairnessApi();
app.Run();

using Queue.Admin;
using Queue.Admin.Infrastructure;

if (await Cli.TryRunAsync(args, Console.Out, Console.Error) is { } exit)
{
    return exit;
}

var builder = WebApplication.CreateBuilder(args);
builder.AddQueueAdminUi();

var app = builder.Build();
app.UseQueueAdminUi();
await app.RunAsync();
return 0;

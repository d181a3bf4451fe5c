@echo off
rem ccmemory from a plugin install on Windows: the same script as bin/ccmemory, run by python3, else python.
where python3 >nul 2>nul
if %errorlevel%==0 (python3 "%~dp0ccmemory" %*) else (python "%~dp0ccmemory" %*)
